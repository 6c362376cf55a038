// launch_overheads_bench: what each way of ordering and signalling a kernel costs on this GPU,
// as round trips seen from the host. The runtime's device path (runtime/gpu/device_ring.cpp) holds
// a kernel behind cuStreamWaitValue32 until the engine releases it, chains it after the ring's
// previous kernel with an event, and learns its end from a stream write (a host function until
// this bench showed what one costs: a small all-reduce through the API took 75-170 us on an H200
// against 14 us for the ring kernels alone). Each row
// times one tiny kernel (kernels/cuda's reduce of one element) with one more mechanism around it,
// so the table says which one the time goes to. -n round trips (after -w), -J JSON. Exit status 77
// without a GPU.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_kernels.hpp"
#include "tests/cuda/one_gpu_ring.hpp"
#include "tests/cuda/sweep_cli.hpp"

namespace tutti::kernels::cuda::test {
namespace {

using Clock = std::chrono::steady_clock;

// Driver entry points the runtime API lacks (stream memory operations), from the driver itself.
template <typename F>
F driverEntry(const char* name) {
  void* entry = nullptr;
  cudaDriverEntryPointQueryResult found{};
  check(cudaGetDriverEntryPointByVersion(name, &entry, 12000, cudaEnableDefault, &found), name);
  if (!entry || found != cudaDriverEntryPointSuccess)
    throw std::runtime_error(std::string("the driver lacks ") + name);
  return reinterpret_cast<F>(entry);
}

void CUDART_CB setFlag(void* flag) {
  static_cast<std::atomic<uint32_t>*>(flag)->store(1, std::memory_order_release);
}

class Overheads {
 public:
  Overheads() : data_(64) {
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming), "cudaEventCreate");
    check(cudaEventCreateWithFlags(&last_, cudaEventDisableTiming), "cudaEventCreate");
    check(cudaEventCreateWithFlags(&callerWork_, cudaEventDisableTiming), "cudaEventCreate");
    check(
        cudaHostAlloc(reinterpret_cast<void**>(&words_), 2 * sizeof(uint32_t), cudaHostAllocMapped),
        "cudaHostAlloc");
    words_[0] = words_[1] = 0;
    void* onDevice = nullptr;
    check(cudaHostGetDevicePointer(&onDevice, words_, 0), "cudaHostGetDevicePointer");
    gate_ = reinterpret_cast<CUdeviceptr>(onDevice);
    ended_ = gate_ + sizeof(uint32_t);
    check(cudaMemset(data_.data(), 0, 64), "cudaMemset");
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }
  ~Overheads() {
    cudaStreamSynchronize(stream_);
    cudaFreeHost(words_);
    cudaEventDestroy(callerWork_);
    cudaEventDestroy(last_);
    cudaEventDestroy(done_);
    cudaStreamDestroy(stream_);
  }
  Overheads(const Overheads&) = delete;
  Overheads& operator=(const Overheads&) = delete;

  // One tiny kernel.
  void kernel() {
    void* dst = data_.data();
    const void* srcs[2] = {data_.data(), data_.data() + 16};
    check(reduceAsync(&dst, 1, srcs, 2, 1, DataType::kFloat32, RedOp::kSum, stream_),
          "reduceAsync");
  }
  void synchronize() { check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }
  void eventPolled() {
    check(cudaEventRecord(done_, stream_), "cudaEventRecord");
    while (cudaEventQuery(done_) == cudaErrorNotReady) {
    }
  }
  void hostFunction() {
    std::atomic<uint32_t> flag{0};
    check(cudaLaunchHostFunc(stream_, setFlag, &flag), "cudaLaunchHostFunc");
    while (flag.load(std::memory_order_acquire) == 0) {
    }
  }
  // The GPU writes `round` into mapped host memory after the kernel; the host spins on it.
  void deviceWrite(uint32_t round) {
    checkDriver(writeValue_(stream_, ended_, round, 0), "cuStreamWriteValue32");
    while (std::atomic_ref<uint32_t>(words_[1]).load(std::memory_order_acquire) != round) {
    }
  }
  // Held: the stream waits until the host writes `round` to the gate (as the engine releases a
  // ticket); the host writes it once everything is enqueued.
  void hold(uint32_t round) {
    checkDriver(waitValue_(stream_, gate_, round, CU_STREAM_WAIT_VALUE_GEQ), "cuStreamWaitValue32");
  }
  void release(uint32_t round) {
    std::atomic_ref<uint32_t>(words_[0]).store(round, std::memory_order_release);
  }
  // After what this thread enqueued on its default stream, as a held launch waits for the
  // caller's earlier work (an event recorded on the per-thread stream).
  void afterCallerWork() {
    check(cudaEventRecord(callerWork_, cudaStreamPerThread), "cudaEventRecord");
    check(cudaStreamWaitEvent(stream_, callerWork_, 0), "cudaStreamWaitEvent");
  }
  // After the previous round's kernel, as the ring chains its launches.
  void chained() {
    check(cudaStreamWaitEvent(stream_, last_, 0), "cudaStreamWaitEvent");
    kernel();
    check(cudaEventRecord(last_, stream_), "cudaEventRecord");
  }

 private:
  // cuStreamWaitValue32 and cuStreamWriteValue32 alike.
  using MemoryOp = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned);
  static void checkDriver(CUresult result, const char* what) {
    if (result != CUDA_SUCCESS) throw std::runtime_error(std::string(what) + " failed");
  }

  DeviceBuffer data_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t done_ = nullptr, last_ = nullptr, callerWork_ = nullptr;
  uint32_t* words_ = nullptr;  // [0] the gate, [1] the ended word: mapped pinned memory
  CUdeviceptr gate_ = 0, ended_ = 0;
  MemoryOp waitValue_ = driverEntry<MemoryOp>("cuStreamWaitValue32");
  MemoryOp writeValue_ = driverEntry<MemoryOp>("cuStreamWriteValue32");
};

struct Row {
  const char* name;
  std::function<void(Overheads&, uint32_t round)> roundTrip;
};

// Median and mean microseconds of `iters` round trips after `warmups`.
std::pair<double, double> timed(Overheads& o, const Row& row, int warmups, int iters,
                                uint32_t& round) {
  for (int i = 0; i < warmups; ++i) row.roundTrip(o, ++round);
  std::vector<double> us;
  for (int i = 0; i < iters; ++i) {
    const auto start = Clock::now();
    row.roundTrip(o, ++round);
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  double sum = 0;
  for (double u : us) sum += u;
  std::nth_element(us.begin(), us.begin() + iters / 2, us.end());
  return {us[size_t(iters / 2)], sum / iters};
}

int run(const SweepOptions& o) {
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  const std::vector<Row> rows = {
      {"kernel, cudaStreamSynchronize",
       [](Overheads& x, uint32_t) { x.kernel(), x.synchronize(); }},
      {"kernel, event polled", [](Overheads& x, uint32_t) { x.kernel(), x.eventPolled(); }},
      {"kernel, host function sets a flag",
       [](Overheads& x, uint32_t) { x.kernel(), x.hostFunction(); }},
      {"kernel, cuStreamWriteValue32 polled",
       [](Overheads& x, uint32_t r) { x.kernel(), x.deviceWrite(r); }},
      {"held (cuStreamWaitValue32), kernel, write polled",
       [](Overheads& x, uint32_t r) { x.hold(r), x.kernel(), x.release(r), x.deviceWrite(r); }},
      {"held, event-chained kernel, write polled",
       [](Overheads& x, uint32_t r) { x.hold(r), x.chained(), x.release(r), x.deviceWrite(r); }},
      {"held, event-chained kernel, host function (the runtime's before)",
       [](Overheads& x, uint32_t r) { x.hold(r), x.chained(), x.release(r), x.hostFunction(); }},
      {"after caller's work, held, event-chained, write (the runtime's)",
       [](Overheads& x, uint32_t r) {
         x.afterCallerWork(), x.hold(r), x.chained(), x.release(r), x.deviceWrite(r);
       }},
  };
  std::printf("# launch overheads on %s: round trips of one tiny kernel, us (median, mean of %d)\n",
              prop.name, o.iters);
  nlohmann::json report = {{"gpu", prop.name}, {"rows", nlohmann::json::array()}};
  Overheads overheads;
  uint32_t round = 0;
  for (const Row& row : rows) {
    const auto [median, mean] = timed(overheads, row, o.warmups, o.iters, round);
    std::printf("  %-66s %8.1f %8.1f\n", row.name, median, mean);
    std::fflush(stdout);
    report["rows"].push_back({{"mechanism", row.name}, {"median_us", median}, {"mean_us", mean}});
  }
  if (!o.jsonFile.empty()) std::ofstream(o.jsonFile) << report.dump(2) << "\n";
  return 0;
}

}  // namespace
}  // namespace tutti::kernels::cuda::test

int main(int argc, char** argv) {
  using namespace tutti::kernels::cuda::test;
  SweepOptions o;
  o.minText = o.maxText = "4";  // no sizes: one tiny kernel
  o.iters = 2000;
  o.warmups = 200;
  const int status =
      parseSweep(argc, argv, "launch_overheads_bench",
                 "what ordering and signalling a kernel costs, as round trips", o, 4);
  if (status >= 0) return status;
  return runOnGpu("launch_overheads_bench", [&] { return run(o); });
}
