// One rank's whole run: the job, the preamble, the sweep, then on rank 0 the files (-J, --csv,
// --plot) and the gates (--compare's --min-ratio, --min-busbw).
#include "bench/benchmark.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench/buffer.hpp"
#include "bench/collectives.hpp"
#include "bench/comm.hpp"
#include "bench/json_report.hpp"
#include "bench/nccl_tests_json.hpp"
#include "bench/nccl_tests_report.hpp"
#include "bench/plot.hpp"
#include "bench/sweep.hpp"
#include "runtime/tuning/tuning_file.hpp"

namespace tutti::bench {
namespace {

// The job's side of the results, which the sweep leaves to rank 0.
void describeJob(Results& results, std::vector<RankInfo> ranks, int nranks) {
  results.nranks = nranks;
  results.ranks = std::move(ranks);
  results.cores = static_cast<int>(std::thread::hardware_concurrency());
  const char* transport = std::getenv("TUTTI_TRANSPORT");
  results.transports = {transport && *transport ? transport : "default"};
}

// Rank 0, after the sweep: the files, then the gates (--compare, --min-busbw).
int finish(const BenchOptions& o, SweepOutcome& sweep, std::vector<RankInfo> ranks, int nranks) {
  Results& results = sweep.results;
  int status = sweep.status;
  describeJob(results, std::move(ranks), nranks);
  if (!o.jsonPath.empty()) writeJson(o.jsonPath, o, results);
  if (!o.csvPath.empty()) writeCsv(o.csvPath, results);
  if (!o.plotPath.empty()) {
    writePlot(o.plotPath, results, fmt::format("tutti-bench {}: {} ranks", o.collective, nranks));
  }
  // A gate that compared nothing would pass whatever the run measured.
  if (!o.comparePath.empty() && sweep.rowsCompared == 0) {
    fmt::print(stderr,
               "tutti-bench: --compare {}: no row of this run has one there to compare with (the "
               "same collective, algorithm, size, type, operation and root, with a bandwidth): "
               "nothing compared\n",
               o.comparePath);
    status = 1;
  }
  if (sweep.rowsBelowRatio > 0) {
    fmt::print(stderr, "tutti-bench: {} row(s) below --min-ratio {} against {}\n",
               sweep.rowsBelowRatio, o.minRatio, o.comparePath);
    status = 1;
  }
  if (o.minBusBw > 0 && results.avgBusBw < o.minBusBw) {
    fmt::print(stderr, "tutti-bench: average bus bandwidth {:g} GB/s is below --min-busbw {:g}\n",
               results.avgBusBw, o.minBusBw);
    status = 1;
  }
  return status;
}

// Rank 0 under a *_perf name, after the sweep: -J in nccl-tests' schema, then its gates (wrong
// data, NCCL_TESTS_MIN_BW) with its exit status.
int finishNcclTests(const BenchOptions& o, SweepOutcome& sweep, std::vector<RankInfo> ranks,
                    int nranks, const std::optional<std::string>& jsonPath,
                    const std::string& startTime) {
  Results& results = sweep.results;
  describeJob(results, std::move(ranks), nranks);
  const std::optional<double> minBusBw = ncclTestsMinBusBw();
  if (jsonPath) {
    writeNcclJson(*jsonPath, ncclTestsJson(o, results, startTime, ncclJsonTime(), minBusBw));
  }
  return ncclTestsStatus(results.failedChecks, results.avgBusBw, minBusBw);
}

}  // namespace

int runBenchmark(const BenchOptions& given, const Results* baseline) {
  BenchOptions options = resolveDevice(given);
  const CollectiveSpec* spec = findCollective(options.collective);
  if (!spec) throw std::runtime_error("unknown collective " + options.collective);
  Comm comm(options);
  // Options that only the job's size shows wrong: rank 0 says so, every rank exits 2.
  std::string refusal;
  if (spec->rooted && !options.allRoots && options.root >= comm.size())
    refusal = fmt::format("-r {}: root must be below the number of ranks ({})", options.root,
                          comm.size());
  // A fault no rank can apply would let a test that expects it pass without a word.
  else if (options.fault.rank >= comm.size())
    refusal = fmt::format("--fault (TUTTI_BENCH_FAULT) {}:{}: no rank {} among {}",
                          options.fault.rank, options.fault.index, options.fault.rank, comm.size());
  if (!refusal.empty()) {
    if (comm.rank() == 0) fmt::print(stderr, "tutti-bench: {}\n", refusal);
    return 2;
  }
  std::vector<RankInfo> ranks = comm.gatherRanks();
  if (options.nccl) {
    std::optional<std::string> jsonPath;
    const std::string startTime = ncclJsonTime();
    if (comm.rank() == 0) {
      std::string notice;
      if (!options.jsonPath.empty()) jsonPath = reserveNcclJson(options.jsonPath, notice);
      for (const auto& note : options.notes) std::fprintf(stderr, "%s\n", note.c_str());
      printEcho(notice);
      std::fputs(formatNcclPreamble(options, ranks).c_str(), stdout);
      std::fflush(stdout);
    }
    SweepOutcome sweep = runSweep(options, comm, *spec, baseline);
    std::fflush(stdout);
    if (comm.rank() != 0) {
      return ncclTestsStatus(sweep.results.failedChecks, sweep.results.avgBusBw,
                             ncclTestsMinBusBw());
    }
    return finishNcclTests(options, sweep, std::move(ranks), comm.size(), jsonPath, startTime);
  }
  if (comm.rank() == 0 && !options.quiet) {
    for (const auto& note : options.notes) std::fprintf(stderr, "%s\n", note.c_str());
    // Rank 0's table: the one every rank plans from (init had it read already, so it reads).
    options.tuning = runtime::tuningInForce().origin;
    std::fputs(formatPreamble(options, ranks).c_str(), stdout);
    std::fflush(stdout);
  }
  SweepOutcome sweep = runSweep(options, comm, *spec, baseline);
  std::fflush(stdout);
  if (comm.rank() != 0) return sweep.status;
  return finish(options, sweep, std::move(ranks), comm.size());
}

}  // namespace tutti::bench
