#include "tests/cuda/one_gpu_ring.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>

namespace tutti::kernels::cuda::test {
namespace {

// Counters on 128-byte lines of their own, as NCCL lays them out: head and tail have one writer
// each, on different ranks.
constexpr size_t kCounterLine = 128;

}  // namespace

void check(cudaError_t result, const char* what) {
  if (result != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorName(result) + " (" +
                             cudaGetErrorString(result) + ")");
  }
}

std::string whyNoGpu() {
  int devices = 0;
  const cudaError_t result = cudaGetDeviceCount(&devices);
  if (result != cudaSuccess) {
    return std::string("cudaGetDeviceCount failed: ") + cudaGetErrorString(result) +
           " (no NVIDIA driver or GPU here)";
  }
  if (devices == 0) return "cudaGetDeviceCount found no GPU";
  const char* blocking = std::getenv("CUDA_LAUNCH_BLOCKING");
  if (blocking && std::string(blocking) != "0") {
    return "CUDA_LAUNCH_BLOCKING is set: ranks on one GPU need their kernels running together";
  }
  return "";
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  void* p = nullptr;
  check(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc");
  data_ = static_cast<unsigned char*>(p);
}

DeviceBuffer::~DeviceBuffer() {
  cudaFree(data_);
}

std::string coResidencyProblem(const RingShape& shape, Collective collective, DataType dtype,
                               RedOp op, Protocol protocol) {
  int device = 0, sms = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
        "cudaDeviceGetAttribute(multiprocessors)");
  check(cudaFree(nullptr), "cudaFree(nullptr)");  // the primary context, current for the driver
  const int perSm = runtime::gpu::collectiveBlocksPerSm(collective, dtype, op, protocol);
  const long needed = static_cast<long>(shape.nranks) * shape.nchannels;
  if (needed <= static_cast<long>(perSm) * sms) return "";
  return std::to_string(shape.nranks) + " ranks x " + std::to_string(shape.nchannels) +
         " channels need " + std::to_string(needed) + " resident blocks; the device holds " +
         std::to_string(perSm) + " per multiprocessor x " + std::to_string(sms);
}

OneGpuRing::OneGpuRing(const RingShape& shape)
    : shape_(shape),
      fifoBytes_(2 * kCounterLine + size_t{shape.nslots} * shape.slotBytes),
      fifos_(fifoBytes_ * static_cast<size_t>(shape.nranks * shape.nchannels)) {
  if (shape.nranks < 1 || shape.nchannels < 1 || shape.nchannels > kMaxChannels) {
    throw std::invalid_argument("OneGpuRing: ranks >= 1 and 1..kMaxChannels channels");
  }
  // Zeroed before first use: counters at 0, and no LL line carries a flag (flags start at 1).
  check(cudaMemset(fifos_.data(), 0, fifos_.bytes()), "cudaMemset(fifos)");
  for (int r = 0; r < shape.nranks; ++r) {
    cudaStream_t s = nullptr;
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    streams_.push_back(s);
  }
  const size_t statusBytes =
      sizeof(device::Status) * static_cast<size_t>(shape.nranks) * kMaxChannels;
  check(cudaHostAlloc(&host_, 16 + statusBytes, cudaHostAllocMapped), "cudaHostAlloc");
  abortFlag_ = static_cast<uint32_t*>(host_);
  statuses_ = reinterpret_cast<device::Status*>(static_cast<unsigned char*>(host_) + 16);
  *abortFlag_ = 0;
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

OneGpuRing::~OneGpuRing() {
  for (cudaStream_t s : streams_) cudaStreamDestroy(s);
  cudaFreeHost(host_);
}

device::Fifo OneGpuRing::fifo(int channel, int from) const {
  unsigned char* base =
      fifos_.data() + fifoBytes_ * static_cast<size_t>(channel * shape_.nranks + from);
  return {reinterpret_cast<uint64_t*>(base), reinterpret_cast<uint64_t*>(base + kCounterLine),
          base + 2 * kCounterLine, shape_.nslots, shape_.slotBytes};
}

void OneGpuRing::launch(int rank, const void* src, void* dst, size_t count, DataType dtype,
                        RedOp op, Protocol protocol, uint64_t spinBudget) {
  launch(rank, {Collective::kAllReduce, 0}, src, dst, count, dtype, op, protocol, spinBudget);
}

void OneGpuRing::launch(int rank, RingCollective collective, const void* src, void* dst,
                        size_t count, DataType dtype, RedOp op, Protocol protocol,
                        uint64_t spinBudget) {
  runtime::gpu::RingCollectiveArgs a{};
  a.nworks = 1;
  a.works[0] = {collective.collective, src, dst, count, collective.root, shape_.nchannels};
  a.dtype = dtype;
  a.op = op;
  a.protocol = protocol;
  a.nranks = shape_.nranks;
  a.rank = rank;
  a.nchannels = shape_.nchannels;
  for (int c = 0; c < shape_.nchannels; ++c)
    a.ring[c] = {fifo(c, (rank + shape_.nranks - 1) % shape_.nranks), fifo(c, rank), rank, nullptr};
  check(cudaHostGetDevicePointer(reinterpret_cast<void**>(&a.abortFlag), abortFlag_, 0),
        "cudaHostGetDevicePointer(abort flag)");
  device::Status* mine = statuses_ + rank * kMaxChannels;
  for (int c = 0; c < shape_.nchannels; ++c) mine[c] = kPending;
  check(cudaHostGetDevicePointer(reinterpret_cast<void**>(&a.status), mine, 0),
        "cudaHostGetDevicePointer(status)");
  a.spinBudget = spinBudget;
  runtime::gpu::launchRing(a, stream(rank));
}

bool OneGpuRing::waitAll(std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    bool idle = true;
    for (cudaStream_t s : streams_) {
      const cudaError_t q = cudaStreamQuery(s);
      if (q == cudaErrorNotReady) {
        idle = false;
      } else {
        check(q, "cudaStreamQuery");
      }
    }
    if (idle) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

bool OneGpuRing::finishOrAbort(std::chrono::milliseconds limit) {
  if (waitAll(limit)) return true;
  std::fprintf(stderr, "ring kernels still running after %lld ms: setting the abort flag\n",
               static_cast<long long>(limit.count()));
  setAbort(true);
  awaitAborted(limit);
  setAbort(false);
  return false;
}

void OneGpuRing::awaitAborted(std::chrono::milliseconds limit) {
  if (waitAll(limit)) return;
  std::fprintf(stderr,
               "FATAL: ring kernels still running %lld ms after the abort flag was set; the GPU "
               "is left spinning, exiting\n",
               static_cast<long long>(limit.count()));
  std::_Exit(1);
}

void OneGpuRing::setAbort(bool on) {
  std::atomic_ref<uint32_t>(*abortFlag_).store(on ? 1 : 0, std::memory_order_relaxed);
}

device::Status OneGpuRing::status(int rank, int channel) const {
  return std::atomic_ref<device::Status>(statuses_[rank * kMaxChannels + channel])
      .load(std::memory_order_relaxed);
}

}  // namespace tutti::kernels::cuda::test
