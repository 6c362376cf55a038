#include "runtime/gpu/stream_order.hpp"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "base/error.hpp"
#include "runtime/gpu/driver.hpp"

namespace tutti::runtime::gpu {

struct StreamOrder::State {
  std::unique_ptr<PinnedPool::Lease> word;  // the completion word, mapped for the device
  CUdeviceptr wordOnDevice = 0;
  std::shared_ptr<const void> keepAlive;
  mutable std::mutex mutex;
  mutable std::condition_variable startedCv;
  bool started = false;
};

namespace {

using Shared = std::shared_ptr<StreamOrder::State>;

// Host functions: each owns one reference to the state, dropped when it returns.
void CUDA_CB signalStarted(void* data) {
  std::unique_ptr<Shared> state(static_cast<Shared*>(data));
  {
    std::lock_guard lock((*state)->mutex);
    (*state)->started = true;
  }
  (*state)->startedCv.notify_all();
}

void CUDA_CB release(void* data) {
  delete static_cast<Shared*>(data);
}

void launchHostFunc(CUstream stream, CUhostFn function, const Shared& state) {
  auto reference = std::make_unique<Shared>(state);
  check(driver().launchHostFunc(stream, function, reference.get()), "cuLaunchHostFunc");
  reference.release();  // the host function owns it now
}

// Drivers since 11.7 enable stream memory operations everywhere; older ones only with the nvidia
// module's NVreg_EnableStreamMemOPs=1.
void checkStreamMemOps(int device) {
  constexpr int kAlwaysOn = 11070;
  int version = 0;
  check(driver().version(&version), "cuDriverGetVersion");
  if (version >= kAlwaysOn) return;
  int usable = 0;
  check(driver().deviceAttribute(&usable, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1, device),
        "cuDeviceGetAttribute");
  if (!usable)
    raise(
        ErrorCode::kInvalidUsage,
        "device {} cannot wait on memory from a stream (CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS "
        "is 0 with driver {}): the stream forms need it (load the nvidia module with "
        "NVreg_EnableStreamMemOPs=1); the blocking and request forms take device buffers",
        device, version);
}

}  // namespace

StreamTarget streamTarget(void* stream) {
  // Ranks as threads of one process each waiting on the legacy default stream, which waits for
  // every blocking stream of the device, would wait for each other.
  if (!stream || stream == CU_STREAM_LEGACY)
    raise(ErrorCode::kInvalidArgument,
          "the stream is {}: the stream forms take a stream the caller created "
          "(cudaStreamCreate), not the legacy default stream",
          stream ? "CU_STREAM_LEGACY" : "NULL");
  StreamTarget target{stream, nullptr, -1};
  CUcontext context = nullptr;
  if (const CUresult result = driver().streamContext(static_cast<CUstream>(stream), &context);
      result != CUDA_SUCCESS)
    raise(ErrorCode::kInvalidArgument, "stream {} is not usable (destroyed?): cuStreamGetCtx: {}",
          stream, describe(result));
  target.context = context;
  {
    ContextScope scope(context);
    CUdevice device = 0;
    check(driver().contextDevice(&device), "cuCtxGetDevice");
    target.device = static_cast<int>(device);
  }
  checkStreamMemOps(target.device);
  return target;
}

void copyOnStream(const StreamTarget& target, void* to, const void* from, size_t bytes) {
  if (bytes == 0) return;
  ContextScope scope(static_cast<CUcontext>(target.context));
  check(
      driver().copyDtoDAsync(reinterpret_cast<CUdeviceptr>(to), reinterpret_cast<CUdeviceptr>(from),
                             bytes, static_cast<CUstream>(target.stream)),
      "cuMemcpyDtoDAsync");
}

bool streamIdle(const StreamTarget& target, std::chrono::milliseconds wait) {
  constexpr std::chrono::microseconds kPoll{50};
  ContextScope scope(static_cast<CUcontext>(target.context));
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    const CUresult result = driver().queryStream(static_cast<CUstream>(target.stream));
    if (result == CUDA_SUCCESS) return true;
    if (result != CUDA_ERROR_NOT_READY) check(result, "cuStreamQuery");
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(kPoll);
  }
}

StreamOrder::StreamOrder(PinnedPool& pool, const StreamTarget& target,
                         std::shared_ptr<const void> keepAlive)
    : state_(std::make_shared<State>()), target_(target) {
  state_->keepAlive = std::move(keepAlive);
  state_->word = pool.take(sizeof(uint32_t), target.context);
  *static_cast<uint32_t*>(state_->word->data()) = 0;
  ContextScope scope(static_cast<CUcontext>(target.context));
  check(driver().hostDevicePointer(&state_->wordOnDevice, state_->word->data(), 0),
        "cuMemHostGetDevicePointer");
}

void StreamOrder::enqueue(const std::vector<StreamCopy>& in, const std::vector<StreamCopy>& out) {
  const Driver& d = driver();
  const auto stream = static_cast<CUstream>(target_.stream);
  ContextScope scope(static_cast<CUcontext>(target_.context));
  bool enqueued = false, waiting = false;
  try {
    for (const StreamCopy& copy : in) {
      check(d.copyDtoHAsync(copy.to, reinterpret_cast<CUdeviceptr>(copy.from), copy.bytes, stream),
            "cuMemcpyDtoHAsync");
      enqueued = true;
    }
    launchHostFunc(stream, signalStarted, state_);
    enqueued = true;
    check(d.waitValue32(stream, state_->wordOnDevice, 1, CU_STREAM_WAIT_VALUE_GEQ),
          "cuStreamWaitValue32");
    waiting = true;
    for (const StreamCopy& copy : out)
      check(d.copyHtoDAsync(reinterpret_cast<CUdeviceptr>(copy.to), copy.from, copy.bytes, stream),
            "cuMemcpyHtoDAsync");
    launchHostFunc(stream, release, state_);
  } catch (const Error&) {
    if (waiting) complete();
    // What was enqueued may still use the staging: then it stays out of the pool for good.
    if (enqueued) static_cast<void>(new Shared(state_));
    throw;
  }
}

bool StreamOrder::waitStarted(std::chrono::milliseconds wait) const {
  std::unique_lock lock(state_->mutex);
  return state_->startedCv.wait_for(lock, wait, [this] { return state_->started; });
}

void StreamOrder::complete() const {
  std::atomic_ref<uint32_t>(*static_cast<uint32_t*>(state_->word->data()))
      .store(1, std::memory_order_release);
}

}  // namespace tutti::runtime::gpu
