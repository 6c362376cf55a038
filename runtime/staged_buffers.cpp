#include "runtime/staged_buffers.hpp"

#include <algorithm>

#include "runtime/invalid_call.hpp"

namespace tutti::runtime {
namespace {

using gpu::MemoryKind;

struct Touched {
  const BufferRange* range;
  gpu::BufferKind kind;
};

std::vector<Touched> classifyTouched(const BufferUse& use) {
  std::vector<Touched> touched;
  for (const BufferRange* range : {&use.read, &use.written})
    if (range->bytes > 0) touched.push_back({range, gpu::classify(range->data)});
  return touched;
}

std::string describe(const Touched& t) {
  if (t.kind.kind == MemoryKind::kDevice || t.kind.kind == MemoryKind::kManaged)
    return fmt::format("{} is {} on device {}", t.range->name, gpu::kindName(t.kind.kind),
                       t.kind.device);
  return fmt::format("{} is {}", t.range->name, gpu::kindName(t.kind.kind));
}

// Device buffers of one call on one device, which is the communicator's.
void checkDevices(Communicator& comm, const char* what, const std::vector<Touched>& touched,
                  MemoryKind kind) {
  const Touched* first = nullptr;
  for (const Touched& t : touched) {
    if (t.kind.kind != kind) continue;
    if (first && t.kind.device != first->kind.device)
      invalidCall(comm, what,
                  fmt::format("{} and {}: one call's buffers are on one device", describe(*first),
                              describe(t)));
    if (!first) first = &t;
  }
  if (!first) return;
  const int bound = comm.device().bindDevice(first->kind.device);
  if (bound != first->kind.device)
    invalidCall(comm, what,
                fmt::format("{}, but this communicator's device buffers are on device {} (its "
                            "first device buffer's)",
                            describe(*first), bound));
}

}  // namespace

std::optional<gpu::BufferKind> devicePlacement(Communicator& comm, const char* what,
                                               const BufferUse& use) {
  if (!gpu::driverReady()) return std::nullopt;
  const std::vector<Touched> touched = classifyTouched(use);
  const auto isDevice = [](const Touched& t) { return t.kind.kind == MemoryKind::kDevice; };
  const auto device = std::find_if(touched.begin(), touched.end(), isDevice);
  if (device == touched.end()) return std::nullopt;
  for (const Touched& t : touched)
    if (t.kind.kind == MemoryKind::kHost || t.kind.kind == MemoryKind::kRegisteredHost)
      invalidCall(comm, what,
                  fmt::format("{} and {}: one call takes host buffers or device buffers, not both",
                              describe(*device), describe(t)));
  checkDevices(comm, what, touched, MemoryKind::kDevice);
  return device->kind;
}

void checkStreamPlacement(Communicator& comm, const char* what, const BufferUse& use, int device) {
  const std::vector<Touched> touched = classifyTouched(use);
  for (const Touched& t : touched) {
    if (t.kind.kind != MemoryKind::kDevice && t.kind.kind != MemoryKind::kManaged)
      invalidCall(comm, what,
                  fmt::format("{}: the stream forms take device (or managed) memory", describe(t)));
    if (t.kind.kind == MemoryKind::kDevice && t.kind.device != device)
      invalidCall(comm, what,
                  fmt::format("{}, but the stream is on device {}", describe(t), device));
  }
  checkDevices(comm, what, touched, MemoryKind::kDevice);
}

StagedBuffers::StagedBuffers(gpu::PinnedPool& pool, const BufferUse& use,
                             const gpu::BufferKind& owner)
    : use_(use), owner_(owner) {
  const auto begin = [](const BufferRange& r) { return static_cast<const char*>(r.data); };
  const auto end = [&](const BufferRange& r) { return begin(r) + r.bytes; };
  const BufferRange& a = use.read;
  const BufferRange& b = use.written;
  if (a.bytes > 0 && b.bytes > 0 && begin(a) < end(b) && begin(b) < end(a)) {
    addRegion(std::min(begin(a), begin(b)), std::max(end(a), end(b)), pool);
    return;
  }
  for (const BufferRange* r : {&a, &b})
    if (r->bytes > 0) addRegion(begin(*r), end(*r), pool);
}

void StagedBuffers::addRegion(const char* begin, const char* end, gpu::PinnedPool& pool) {
  const size_t bytes = static_cast<size_t>(end - begin);
  regions_.push_back({begin, bytes, pool.take(bytes, owner_.context)});
}

void* StagedBuffers::map(const void* user) const {
  const auto* p = static_cast<const char*>(user);
  for (const Region& region : regions_)
    if (p >= region.user && p < region.user + region.bytes)
      return static_cast<char*>(region.lease->data()) + (p - region.user);
  return const_cast<void*>(user);
}

void StagedBuffers::copyIn() const {
  if (use_.read.bytes > 0)
    gpu::copyToHost(map(use_.read.data), use_.read.data, use_.read.bytes, owner_);
}

void StagedBuffers::copyOut() const {
  if (use_.written.bytes > 0)
    gpu::copyToDevice(const_cast<void*>(use_.written.data), map(use_.written.data),
                      use_.written.bytes, owner_);
}

}  // namespace tutti::runtime
