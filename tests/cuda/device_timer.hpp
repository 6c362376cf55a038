// Timing of work on one CUDA stream with events, shared by the `cuda` suite's copy-bandwidth
// benchmarks: the mean time of `iters` runs of an enqueued operation after `warmups`.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>

namespace tutti::kernels::cuda::test {

class DeviceTimer {
 public:
  DeviceTimer();
  ~DeviceTimer();
  DeviceTimer(const DeviceTimer&) = delete;
  DeviceTimer& operator=(const DeviceTimer&) = delete;

  cudaStream_t stream() const { return stream_; }
  // Seconds per run of `enqueue` (which enqueues one run on stream()).
  double seconds(const std::function<void()>& enqueue, int warmups, int iters);

 private:
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

// Bytes per second, in GB/s (1e9 bytes).
inline double gbPerSecond(double bytes, double seconds) {
  return seconds > 0 ? bytes / seconds / 1e9 : 0;
}

}  // namespace tutti::kernels::cuda::test
