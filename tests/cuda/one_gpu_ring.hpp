// Several ranks of the ring collectives' kernels (kernels/cuda/collective_kernel.cu, launched
// through libtutti's runtime/gpu/kernel_launch.hpp) on ONE GPU, as
// issue 18 (item 5) wants a one-GPU machine to run them: every rank's FIFOs in device memory, each
// rank's kernel on a stream of its own so that all of them are resident at once (they wait on
// each other's blocks), the abort flag and each channel's status in mapped host memory. Shared by
// the `cuda` suite's test and the one-GPU benchmark.
//
// Co-residency needs more than enough multiprocessors (coResidencyProblem): launches must not
// block (CUDA_LAUNCH_BLOCKING, refused by whyNoGpu), and with lazy module loading (CUDA 12's
// default) loading a kernel may wait for the running ones; all ranks of an operation launch the
// same kernel, so it is loaded at the first rank's launch, before anything waits.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kernels.hpp"
#include "runtime/gpu/kernel_launch.hpp"

namespace tutti::kernels::cuda::test {

using device::kMaxChannels;
using runtime::gpu::Collective;
using runtime::gpu::Protocol;

// Throws std::runtime_error naming `what` and CUDA's message unless result is cudaSuccess.
void check(cudaError_t result, const char* what);

// Why this process cannot run the GPU checks (no driver, no device, launches forced to block), or
// "" when it can; the `cuda` suite's programs exit 77 (skipped) with it.
std::string whyNoGpu();

// Device memory, freed with the object.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  unsigned char* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  unsigned char* data_ = nullptr;
  size_t bytes_;
};

struct RingShape {
  int nranks;
  int nchannels;
  uint32_t nslots;
  uint32_t slotBytes;
};

// "" when nranks x nchannels blocks of the kernel for (dtype, op, protocol) fit on the device at
// once, else why not: ranks whose blocks cannot all be resident wait for each other forever (or
// until the abort flag).
std::string coResidencyProblem(const RingShape& shape, Collective collective, DataType dtype,
                               RedOp op, Protocol protocol);

// A collective over the ring: which, and for broadcast and reduce the root's position.
struct RingCollective {
  Collective collective;
  int root;
};

class OneGpuRing {
 public:
  explicit OneGpuRing(const RingShape& shape);
  ~OneGpuRing();
  OneGpuRing(const OneGpuRing&) = delete;
  OneGpuRing& operator=(const OneGpuRing&) = delete;

  const RingShape& shape() const { return shape_; }
  cudaStream_t stream(int rank) const { return streams_[static_cast<size_t>(rank)]; }

  // Enqueues rank `rank`'s all-reduce on its stream; its channels' statuses read kPending until
  // the kernel writes them. Throws on a refused launch.
  void launch(int rank, const void* src, void* dst, size_t count, DataType dtype, RedOp op,
              Protocol protocol, uint64_t spinBudget = device::kNoSpinBudget);
  // The same for any collective over the ring, with the C API's buffer layouts (cuda_kernels.hpp).
  void launch(int rank, RingCollective collective, const void* src, void* dst, size_t count,
              DataType dtype, RedOp op, Protocol protocol,
              uint64_t spinBudget = device::kNoSpinBudget);

  // Polls every rank's stream (cudaStreamQuery, so a hung kernel cannot hang the caller) until
  // all are idle (true) or `limit` has passed (false).
  bool waitAll(std::chrono::milliseconds limit);
  // waitAll(limit), and if that fails, sets the abort flag and awaitAborted(limit): false then,
  // and the ring's FIFOs are left mid-operation (use a new ring).
  bool finishOrAbort(std::chrono::milliseconds limit);
  // With the abort flag set: waits for every kernel to return. One that does not leaves the GPU
  // spinning, and since nothing can be freed under a running kernel the process ends at once
  // (exit status 1), saying so.
  void awaitAborted(std::chrono::milliseconds limit);

  void setAbort(bool on);
  static constexpr auto kPending = static_cast<device::Status>(-1);
  device::Status status(int rank, int channel) const;

 private:
  device::Fifo fifo(int channel, int from) const;

  RingShape shape_;
  size_t fifoBytes_;  // one FIFO: its two counters on lines of their own, then its slots
  DeviceBuffer fifos_;
  std::vector<cudaStream_t> streams_;
  // Mapped host memory: the abort flag, then nranks x kMaxChannels statuses.
  void* host_ = nullptr;
  uint32_t* abortFlag_ = nullptr;
  device::Status* statuses_ = nullptr;
};

}  // namespace tutti::kernels::cuda::test
