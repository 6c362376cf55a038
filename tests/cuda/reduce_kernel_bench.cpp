// reduce_kernel_bench: kernels/cuda's reduce (reduceAsync) against cudaMemcpy device to device on
// the same GPU (issue 18, item 7a): 2 and 8 inputs, float32 and bfloat16, sizes doubling from -b
// to -e (bytes per input). Bandwidth counts the bytes read and written: (inputs + 1) x size for
// the reduce, 2 x size for the copy, so that a kernel as fast as the memory reads ratio 1. Each
// case's result is checked once against kernels::reduce on the host (the same functors) over its
// first elements. Prints a table; -J writes JSON. Exit status 77 without a GPU, 1 on a wrong
// result.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/types.hpp"
#include "kernels/cuda/cuda_kernels.hpp"
#include "tests/cuda/device_timer.hpp"
#include "tests/cuda/one_gpu_ring.hpp"
#include "tests/cuda/sweep_cli.hpp"

namespace tutti::kernels::cuda::test {
namespace {

constexpr size_t kCheckedElements = 1 << 16;

using Options = SweepOptions;

class ReduceBench {
 public:
  ReduceBench(const Options& o, int nsrcs) : o_(o), dst_(o.maxBytes) {
    for (int s = 0; s < nsrcs; ++s) {
      srcs_.push_back(std::make_unique<DeviceBuffer>(o.maxBytes));
      // Every byte 0x3c + s: finite float32 and bfloat16 values, different per input.
      check(cudaMemset(srcs_.back()->data(), 0x3c + s, o.maxBytes), "cudaMemset");
      srcPointers_.push_back(srcs_.back()->data());
    }
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }

  double copySeconds(size_t bytes) {
    return timer_.seconds(
        [&] {
          check(cudaMemcpyAsync(dst_.data(), srcs_[0]->data(), bytes, cudaMemcpyDeviceToDevice,
                                timer_.stream()),
                "cudaMemcpyAsync");
        },
        o_.warmups, o_.iters);
  }

  double reduceSeconds(size_t bytes, DataType dtype) {
    return timer_.seconds([&] { enqueueReduce(bytes / typeSize(dtype), dtype); }, o_.warmups,
                          o_.iters);
  }

  // Whether one reduce of `count` elements equals the host's over the first elements.
  bool correct(size_t count, DataType dtype) {
    enqueueReduce(count, dtype);
    check(cudaStreamSynchronize(timer_.stream()), "cudaStreamSynchronize");
    const size_t bytes = std::min(count, kCheckedElements) * typeSize(dtype);
    std::vector<std::vector<unsigned char>> inputs;
    std::vector<const void*> inputPointers;
    for (const auto& src : srcs_) {
      inputs.emplace_back(bytes);
      check(cudaMemcpy(inputs.back().data(), src->data(), bytes, cudaMemcpyDeviceToHost),
            "cudaMemcpy");
      inputPointers.push_back(inputs.back().data());
    }
    std::vector<unsigned char> expected(bytes), got(bytes);
    void* out = expected.data();
    kernels::reduce(&out, 1, inputPointers.data(), static_cast<int>(inputPointers.size()),
                    bytes / typeSize(dtype), dtype, RedOp::kSum);
    check(cudaMemcpy(got.data(), dst_.data(), bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
    return std::memcmp(got.data(), expected.data(), bytes) == 0;
  }

 private:
  void enqueueReduce(size_t count, DataType dtype) {
    void* dst = dst_.data();
    check(reduceAsync(&dst, 1, srcPointers_.data(), static_cast<int>(srcPointers_.size()), count,
                      dtype, RedOp::kSum, timer_.stream()),
          "reduceAsync");
  }

  const Options& o_;
  std::vector<std::unique_ptr<DeviceBuffer>> srcs_;
  std::vector<const void*> srcPointers_;
  DeviceBuffer dst_;
  DeviceTimer timer_;
};

int run(const Options& o) {
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::printf("# reduce kernel against cudaMemcpy device to device on %s\n", prop.name);
  std::printf("# GB/s of bytes read + written; ratio = reduce / copy\n");
  std::printf("#%12s %9s %6s %10s %10s %6s %6s\n", "size(B)", "type", "inputs", "copy", "reduce",
              "ratio", "check");
  nlohmann::json report = {{"gpu", prop.name}, {"rows", nlohmann::json::array()}};
  int wrong = 0;
  for (int nsrcs : {2, 8}) {
    ReduceBench b(o, nsrcs);
    for (DataType dtype : {DataType::kFloat32, DataType::kBfloat16}) {
      const bool ok = b.correct(o.maxBytes / typeSize(dtype), dtype);
      wrong += !ok;
      for (size_t bytes = o.minBytes; bytes <= o.maxBytes; bytes *= 2) {
        const double copy = gbPerSecond(2.0 * bytes, b.copySeconds(bytes));
        const double reduce = gbPerSecond((nsrcs + 1.0) * bytes, b.reduceSeconds(bytes, dtype));
        const double ratio = copy > 0 ? reduce / copy : 0;
        std::printf(" %12zu %9s %6d %10.1f %10.1f %6.2f %6s\n", bytes, typeName(dtype), nsrcs, copy,
                    reduce, ratio, ok ? "ok" : "WRONG");
        std::fflush(stdout);
        report["rows"].push_back({{"bytes", bytes},
                                  {"type", typeName(dtype)},
                                  {"inputs", nsrcs},
                                  {"copy_gbs", copy},
                                  {"reduce_gbs", reduce},
                                  {"ratio", ratio},
                                  {"correct", ok}});
      }
    }
  }
  report["wrong"] = wrong;
  if (!o.jsonFile.empty()) std::ofstream(o.jsonFile) << report.dump(2) << "\n";
  return wrong ? 1 : 0;
}

}  // namespace
}  // namespace tutti::kernels::cuda::test

int main(int argc, char** argv) {
  using namespace tutti::kernels::cuda::test;
  Options o;
  o.minText = "1M";
  o.maxText = "1G";
  const int status = parseSweep(argc, argv, "reduce_kernel_bench",
                                "kernels/cuda's reduce against cudaMemcpy device to device", o, 4);
  if (status >= 0) return status;
  return runOnGpu("reduce_kernel_bench", [&] { return run(o); });
}
