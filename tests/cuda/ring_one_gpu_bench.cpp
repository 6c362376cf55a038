// ring_one_gpu_bench: the ring all-reduce kernel's speed with several ranks sharing one GPU
// (one_gpu_ring.hpp), float32 sum, sizes doubling from -b to -e, each protocol, printed in
// nccl-tests' table layout (bench/report.hpp: time, algbw, busbw, #wrong, out of place and in
// place) and optionally as JSON. Time is measured with CUDA events from a start that every
// rank's stream waits for to the end of the slowest rank, over -n iterations after -w warm-ups.
// Each row's data is checked once before it is timed (nccl-tests' -c 1). Exit status 77 without
// a GPU, 1 if a result was wrong or a kernel had to be aborted.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/report.hpp"
#include "bench/types.hpp"
#include "tests/cuda/one_gpu_ring.hpp"
#include "tests/cuda/sweep_cli.hpp"

namespace tutti::kernels::cuda::test {
namespace {

using bench::printfString;
using std::chrono::milliseconds;

// A whole timed row (-n all-reduces of up to 256 MiB) ends in seconds; this means a hang.
constexpr milliseconds kLimit{120000};

struct Options : SweepOptions, RingSweep {};

struct ProtocolSetup {
  const char* name;
  Protocol protocol;
  uint32_t nslots;
  uint32_t slotBytes;  // NCCL's step sizes: Simple's large for bandwidth, LL's small for latency
};
constexpr ProtocolSetup kProtocols[] = {{"Simple", Protocol::kSimple, 8, 128 << 10},
                                        {"LL", Protocol::kLL, 8, 16 << 10}};

// Rank r's input: small integers, so every sum is exact in float whatever the order.
float inputValue(int rank, size_t i) {
  return static_cast<float>(static_cast<int>((i * 7 + static_cast<size_t>(rank) * 3) % 17) - 8);
}

class Bench {
 public:
  Bench(const Options& o, const ProtocolSetup& p, int nranks)
      : o_(o), p_(p), ring_({nranks, o.channels, p.nslots, p.slotBytes}) {
    const size_t count = o.maxBytes / sizeof(float);
    for (int r = 0; r < nranks; ++r) {
      inputs_.emplace_back(count);
      for (size_t i = 0; i < count; ++i) inputs_.back()[i] = inputValue(r, i);
      src_.emplace_back(std::make_unique<DeviceBuffer>(o.maxBytes));
      dst_.emplace_back(std::make_unique<DeviceBuffer>(o.maxBytes));
    }
    expected_.resize(count);
    for (size_t i = 0; i < count; ++i) {
      float sum = 0;
      for (int r = 0; r < nranks; ++r) sum += inputValue(r, i);
      expected_[i] = sum;
    }
    check(cudaEventCreate(&start_), "cudaEventCreate");
    check(cudaEventCreate(&stop_), "cudaEventCreate");
    for (int r = 0; r < nranks; ++r) {
      cudaEvent_t e = nullptr;
      check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
      rankDone_.push_back(e);
    }
  }
  ~Bench() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
    for (cudaEvent_t e : rankDone_) cudaEventDestroy(e);
  }
  Bench(const Bench&) = delete;
  Bench& operator=(const Bench&) = delete;

  // One placement at `bytes`: the data checked once, then timed. Sets aborted() on a hang.
  bench::Measurement measure(size_t bytes, bool inPlace) {
    const size_t count = bytes / sizeof(float);
    const int n = ring_.shape().nranks;
    for (int r = 0; r < n; ++r) {
      check(cudaMemcpy(src(r), inputs_[r].data(), count * sizeof(float), cudaMemcpyHostToDevice),
            "cudaMemcpy(inputs)");
      if (!inPlace) check(cudaMemset(dst(r, false), 0xCD, bytes), "cudaMemset(poison)");
    }
    bench::Measurement m;
    launchAll(count, inPlace);
    if (!finish()) return m;
    m.wrong = countWrong(count, inPlace);

    for (int i = 0; i < o_.warmups; ++i) launchAll(count, inPlace);
    check(cudaEventRecord(start_, ring_.stream(0)), "cudaEventRecord");
    for (int r = 1; r < n; ++r) {
      check(cudaStreamWaitEvent(ring_.stream(r), start_, 0), "cudaStreamWaitEvent");
    }
    for (int i = 0; i < o_.iters; ++i) launchAll(count, inPlace);
    for (int r = 1; r < n; ++r) {
      check(cudaEventRecord(rankDone_[r], ring_.stream(r)), "cudaEventRecord");
      check(cudaStreamWaitEvent(ring_.stream(0), rankDone_[r], 0), "cudaStreamWaitEvent");
    }
    check(cudaEventRecord(stop_, ring_.stream(0)), "cudaEventRecord");
    if (!finish()) return m;
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    m.seconds = ms / 1e3 / o_.iters;
    m.bandwidth = bench::bandwidth(bytes, m.seconds, 2.0 * (n - 1) / n);  // nccl-tests' factor
    return m;
  }

  bool aborted() const { return aborted_; }

 private:
  unsigned char* src(int r) { return src_[static_cast<size_t>(r)]->data(); }
  unsigned char* dst(int r, bool inPlace) {
    return inPlace ? src(r) : dst_[static_cast<size_t>(r)]->data();
  }

  void launchAll(size_t count, bool inPlace) {
    for (int r = 0; r < ring_.shape().nranks; ++r) {
      ring_.launch(r, src(r), dst(r, inPlace), count, DataType::kFloat32, RedOp::kSum, p_.protocol);
    }
  }

  // Waits for every rank; false (and aborted()) if that took the abort flag or a channel of the
  // last operation did not end kOk (sizes here are never 0, so every launch writes statuses).
  bool finish() {
    aborted_ = !ring_.finishOrAbort(kLimit);
    for (int r = 0; r < ring_.shape().nranks; ++r) {
      for (int c = 0; c < ring_.shape().nchannels; ++c) {
        aborted_ = aborted_ || ring_.status(r, c) != device::Status::kOk;
      }
    }
    return !aborted_;
  }

  int64_t countWrong(size_t count, bool inPlace) {
    int64_t wrong = 0;
    std::vector<float> got(count);
    for (int r = 0; r < ring_.shape().nranks; ++r) {
      check(cudaMemcpy(got.data(), dst(r, inPlace), count * sizeof(float), cudaMemcpyDeviceToHost),
            "cudaMemcpy(results)");
      for (size_t i = 0; i < count; ++i) wrong += got[i] != expected_[i];
    }
    return wrong;
  }

  const Options& o_;
  const ProtocolSetup& p_;
  OneGpuRing ring_;
  std::vector<std::vector<float>> inputs_;
  std::vector<float> expected_;
  std::vector<std::unique_ptr<DeviceBuffer>> src_, dst_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  std::vector<cudaEvent_t> rankDone_;
  bool aborted_ = false;
};

nlohmann::json toJson(const bench::Measurement& m) {
  nlohmann::json j = {{"time_us", m.seconds * 1e6},
                      {"algbw_GBps", m.bandwidth.algbw},
                      {"busbw_GBps", m.bandwidth.busbw}};
  j["wrong"] = m.wrong ? nlohmann::json(*m.wrong) : nlohmann::json(nullptr);
  return j;
}

int run(const Options& o) {
  int device = 0;
  cudaDeviceProp prop{};
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  std::printf(
      "# ring_one_gpu_bench: %s (sm_%d%d, %d multiprocessors), float32 sum, %d channels, "
      "-n %d -w %d\n",
      prop.name, prop.major, prop.minor, prop.multiProcessorCount, o.channels, o.iters, o.warmups);
  nlohmann::json report = {
      {"gpu", prop.name},
      {"compute_capability", std::to_string(prop.major) + "." + std::to_string(prop.minor)},
      {"channels", o.channels},
      {"iters", o.iters},
      {"warmups", o.warmups},
      {"tables", nlohmann::json::array()}};
  int64_t failedChecks = 0;
  bool aborted = false;
  for (const ProtocolSetup& p : kProtocols) {
    for (const int nranks : o.ranks) {
      const RingShape shape{nranks, o.channels, p.nslots, p.slotBytes};
      const std::string problem = coResidencyProblem(shape, Collective::kAllReduce,
                                                     DataType::kFloat32, RedOp::kSum, p.protocol);
      if (!problem.empty()) {
        std::printf("# %s, %d ranks: skipped, the ranks cannot run together: %s\n", p.name, nranks,
                    problem.c_str());
        continue;
      }
      std::printf("#\n# %s, %d ranks on one GPU, %u slots of %u bytes per FIFO\n", p.name, nranks,
                  p.nslots, p.slotBytes);
      std::printf("%s", bench::formatTableHeader({}, false).c_str());
      Bench b(o, p, nranks);
      nlohmann::json table = {{"protocol", p.name},
                              {"ranks", nranks},
                              {"slots", p.nslots},
                              {"slot_bytes", p.slotBytes},
                              {"rows", nlohmann::json::array()}};
      int64_t tableFailed = 0;
      double busbwSum = 0;
      int rows = 0;
      for (size_t bytes = o.minBytes; bytes <= o.maxBytes && !b.aborted(); bytes *= 2) {
        const bench::Measurement out = b.measure(bytes, false);
        const bench::Measurement in = b.measure(bytes, true);
        std::printf("%s%s%s\n",
                    bench::formatRowStart(bytes, bytes / sizeof(float), "float", "sum", -1).c_str(),
                    bench::formatMeasurement(out).c_str(), bench::formatMeasurement(in).c_str());
        std::fflush(stdout);
        tableFailed += (out.wrong.value_or(1) != 0) + (in.wrong.value_or(1) != 0);
        busbwSum += out.bandwidth.busbw + in.bandwidth.busbw;
        rows += 2;
        table["rows"].push_back({{"bytes", bytes},
                                 {"count", bytes / sizeof(float)},
                                 {"out_of_place", toJson(out)},
                                 {"in_place", toJson(in)}});
      }
      if (b.aborted()) std::printf("# ABORTED: a kernel did not finish within its limit\n");
      aborted = aborted || b.aborted();
      std::printf("%s", bench::formatFooter(tableFailed, rows ? busbwSum / rows : 0).c_str());
      failedChecks += tableFailed;
      table["aborted"] = b.aborted();
      report["tables"].push_back(table);
    }
  }
  report["failed_checks"] = failedChecks;
  report["aborted"] = aborted;
  if (!o.jsonFile.empty()) std::ofstream(o.jsonFile) << report.dump(2) << "\n";
  return failedChecks || aborted ? 1 : 0;
}

}  // namespace
}  // namespace tutti::kernels::cuda::test

int main(int argc, char** argv) {
  using namespace tutti::kernels::cuda::test;
  Options o;
  o.minText = "1K";
  o.maxText = "256M";
  const int status = parseSweep(argc, argv, "ring_one_gpu_bench",
                                "The ring all-reduce kernel with several ranks on one GPU, "
                                "nccl-tests' table",
                                o, sizeof(float), &o);
  if (status >= 0) return status;
  return runOnGpu("ring_one_gpu_bench", [&] { return run(o); });
}
