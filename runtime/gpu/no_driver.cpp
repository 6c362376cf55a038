// The GPU path of a build that found no cuda.h: every pointer is host memory, and what needs the
// driver says that this build lacks it.
#include "base/error.hpp"
#include "runtime/gpu/device_ring.hpp"
#include "runtime/gpu/gpu.hpp"
#include "runtime/gpu/gpu_sharing.hpp"
#include "runtime/gpu/pinned_pool.hpp"
#include "runtime/gpu/stream_order.hpp"

namespace tutti::runtime::gpu {

bool driverReady() {
  return false;
}

void requireDriver() {
  raise(ErrorCode::kSystem,
        "no GPU path: this tutti was built without the CUDA toolkit's cuda.h, so it does not load "
        "the CUDA driver (libcuda.so.1)");
}

std::string whyNoKernels() {
  return "this tutti was built without the CUDA toolkit's cuda.h";
}

BufferKind classify(const void*) {
  return {};
}

int deviceCount() {
  return 0;
}

void* allocateDevice(size_t, int) {
  requireDriver();
  return nullptr;
}

void freeDevice(void* ptr) {
  if (ptr) requireDriver();
}

void copyToHost(void*, const void*, size_t, const BufferKind&) {
  requireDriver();
}

void copyToDevice(void*, const void*, size_t, const BufferKind&) {
  requireDriver();
}

void copyOnDevice(void*, const void*, size_t, const BufferKind&) {
  requireDriver();
}

GpuFacts gpuFacts(int) {
  requireDriver();
  return {};
}

struct PinnedPool::State {};

PinnedPool::Lease::Lease(std::shared_ptr<State> state, void* data, size_t size)
    : state_(std::move(state)), data_(data), size_(size) {}
PinnedPool::Lease::~Lease() = default;
PinnedPool::PinnedPool() = default;
PinnedPool::~PinnedPool() = default;

std::unique_ptr<PinnedPool::Lease> PinnedPool::take(size_t, void*) {
  requireDriver();
  return nullptr;
}

void PinnedPool::close(std::chrono::milliseconds) {}

StreamTarget streamTarget(void*) {
  requireDriver();
  return {};
}

void copyOnStream(const StreamTarget&, void*, const void*, size_t) {
  requireDriver();
}

struct StreamOrder::State {};

StreamOrder::StreamOrder(PinnedPool&, const StreamTarget&, std::shared_ptr<const void>) {
  requireDriver();
}
void StreamOrder::enqueue(const std::vector<StreamCopy>&, const std::vector<StreamCopy>&) {}
bool StreamOrder::waitStarted(std::chrono::milliseconds) const {
  return false;
}
void StreamOrder::complete() const {}

struct DeviceRing::State {};
KernelRun::KernelRun(std::shared_ptr<PinnedPool::Lease> statuses, int nchannels)
    : statuses_(std::move(statuses)), nchannels_(nchannels) {}
KernelRun::State KernelRun::state() const {
  return State::kDone;
}
bool KernelRun::succeeded() const {
  return false;
}
DeviceRing::DeviceRing(const RingMembers&, PinnedPool&, const Deadline&) {
  requireDriver();
}
DeviceRing::~DeviceRing() = default;
void DeviceRing::connectTree(const Deadline&) {
  requireDriver();
}
std::shared_ptr<const KernelRun> DeviceRing::launch(std::span<const RingCall>, void*) {
  requireDriver();
  return nullptr;
}
std::pair<std::shared_ptr<const KernelRun>, uint32_t> DeviceRing::launchHeld(
    std::span<const RingCall>) {
  requireDriver();
  return {};
}
bool DeviceRing::fusable(std::span<const RingCall>, const RingCall&) const {
  return false;
}
void DeviceRing::release(uint32_t) {}
void DeviceRing::abort() {}
bool DeviceRing::treeConnected() const {
  return false;
}
std::optional<Error> DeviceRing::linkFailure() const {
  return std::nullopt;
}

}  // namespace tutti::runtime::gpu
