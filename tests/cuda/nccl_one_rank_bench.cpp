// nccl_one_rank_bench: NCCL's one-rank all-reduce on this GPU beside cudaMemcpy device to device
// (issue 18, item 7c): the anchor for what a one-rank device all-reduce can reach, which tutti's
// (tutti-bench --device cuda --ranks 1, in the same gpu-check run) is held against. libnccl is
// loaded with dlopen (NCCL_LIBRARY, default libnccl.so.2: the CUDA toolkit ships one), so that
// the program builds wherever the toolkit's nccl.h is. Out of place, float32 sum, sizes doubling
// from -b to -e; algbw = size / time for both (busbw is 0 for one rank). Prints a table; -J
// writes JSON. Exit status 77 without a GPU or without libnccl, 1 on an NCCL error.
#include <dlfcn.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "bench/types.hpp"
#include "tests/cuda/device_timer.hpp"
#include "tests/cuda/one_gpu_ring.hpp"
#include "tests/cuda/sweep_cli.hpp"

namespace tutti::kernels::cuda::test {
namespace {

using Options = SweepOptions;

struct Nccl {
  decltype(&::ncclCommInitAll) initAll;
  decltype(&::ncclAllReduce) allReduce;
  decltype(&::ncclCommDestroy) destroy;
  decltype(&::ncclGetErrorString) errorString;
  decltype(&::ncclGetVersion) version;

  void check(ncclResult_t result, const char* what) const {
    if (result != ncclSuccess)
      throw std::runtime_error(std::string(what) + ": " + errorString(result));
  }
};

// The library's entry points, or "" filled with why it cannot be used.
Nccl loadNccl(std::string& why) {
  const char* name = std::getenv("NCCL_LIBRARY") ? std::getenv("NCCL_LIBRARY") : "libnccl.so.2";
  Nccl n{};
  void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    why = std::string(name) + " cannot be loaded: " + dlerror();
    return n;
  }
  auto get = [&](const char* symbol, auto& out) {
    out = reinterpret_cast<std::remove_reference_t<decltype(out)>>(dlsym(handle, symbol));
    if (!out && why.empty()) why = std::string(name) + " lacks " + symbol;
  };
  get("ncclCommInitAll", n.initAll);
  get("ncclAllReduce", n.allReduce);
  get("ncclCommDestroy", n.destroy);
  get("ncclGetErrorString", n.errorString);
  get("ncclGetVersion", n.version);
  return n;
}

int run(const Options& o, const Nccl& nccl) {
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  int version = 0;
  nccl.check(nccl.version(&version), "ncclGetVersion");
  ncclComm_t comm = nullptr;
  int device = 0;
  nccl.check(nccl.initAll(&comm, 1, &device), "ncclCommInitAll");
  DeviceBuffer src(o.maxBytes), dst(o.maxBytes);
  check(cudaMemset(src.data(), 0x3c, o.maxBytes), "cudaMemset");
  DeviceTimer timer;
  std::printf("# NCCL %d one-rank all-reduce (float32 sum, out of place) and cudaMemcpy on %s\n",
              version, prop.name);
  std::printf("#%12s %12s %12s %6s\n", "size(B)", "memcpy GB/s", "nccl GB/s", "ratio");
  nlohmann::json report = {
      {"gpu", prop.name}, {"nccl_version", version}, {"rows", nlohmann::json::array()}};
  for (size_t bytes = o.minBytes; bytes <= o.maxBytes; bytes *= 2) {
    const double copy =
        gbPerSecond(bytes, timer.seconds(
                               [&] {
                                 check(cudaMemcpyAsync(dst.data(), src.data(), bytes,
                                                       cudaMemcpyDeviceToDevice, timer.stream()),
                                       "cudaMemcpyAsync");
                               },
                               o.warmups, o.iters));
    const double reduce = gbPerSecond(
        bytes, timer.seconds(
                   [&] {
                     nccl.check(nccl.allReduce(src.data(), dst.data(), bytes / sizeof(float),
                                               ncclFloat32, ncclSum, comm, timer.stream()),
                                "ncclAllReduce");
                   },
                   o.warmups, o.iters));
    const double ratio = copy > 0 ? reduce / copy : 0;
    std::printf(" %12zu %12.1f %12.1f %6.2f\n", bytes, copy, reduce, ratio);
    std::fflush(stdout);
    report["rows"].push_back(
        {{"bytes", bytes}, {"memcpy_gbs", copy}, {"nccl_gbs", reduce}, {"ratio", ratio}});
  }
  nccl.destroy(comm);
  if (!o.jsonFile.empty()) std::ofstream(o.jsonFile) << report.dump(2) << "\n";
  return 0;
}

}  // namespace
}  // namespace tutti::kernels::cuda::test

int main(int argc, char** argv) {
  using namespace tutti::kernels::cuda::test;
  Options o;
  o.minText = "1M";
  o.maxText = "1G";
  const int status =
      parseSweep(argc, argv, "nccl_one_rank_bench",
                 "NCCL's one-rank all-reduce beside cudaMemcpy device to device", o, 4);
  if (status >= 0) return status;
  return runOnGpu("nccl_one_rank_bench", [&] {
    std::string why;
    const Nccl nccl = loadNccl(why);
    if (!why.empty()) {
      std::printf("skipped: %s\n", why.c_str());
      return 77;
    }
    return run(o, nccl);
  });
}
