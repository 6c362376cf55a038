#include "tests/cuda/device_timer.hpp"

#include "tests/cuda/one_gpu_ring.hpp"

namespace tutti::kernels::cuda::test {

DeviceTimer::DeviceTimer() {
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  check(cudaEventCreate(&start_), "cudaEventCreate");
  check(cudaEventCreate(&stop_), "cudaEventCreate");
}

DeviceTimer::~DeviceTimer() {
  cudaEventDestroy(start_);
  cudaEventDestroy(stop_);
  cudaStreamDestroy(stream_);
}

double DeviceTimer::seconds(const std::function<void()>& enqueue, int warmups, int iters) {
  for (int i = 0; i < warmups; ++i) enqueue();
  check(cudaEventRecord(start_, stream_), "cudaEventRecord");
  for (int i = 0; i < iters; ++i) enqueue();
  check(cudaEventRecord(stop_, stream_), "cudaEventRecord");
  check(cudaEventSynchronize(stop_), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
  return ms / 1e3 / iters;
}

}  // namespace tutti::kernels::cuda::test
