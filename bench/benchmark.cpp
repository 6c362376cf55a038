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

#include "bench/collectives.hpp"
#include "bench/comm.hpp"
#include "bench/json_report.hpp"
#include "bench/plot.hpp"
#include "bench/sweep.hpp"

namespace tutti::bench {
namespace {

// Rank 0, after the sweep: the files, then the gates (--compare, --min-busbw).
int finish(const BenchOptions& o, SweepOutcome& sweep, std::vector<RankInfo> ranks, int nranks) {
  Results& results = sweep.results;
  int status = sweep.status;
  results.nranks = nranks;
  results.ranks = std::move(ranks);
  results.cores = static_cast<int>(std::thread::hardware_concurrency());
  const char* transport = std::getenv("TUTTI_TRANSPORT");
  results.transports = {transport && *transport ? transport : "default"};
  if (!o.jsonPath.empty()) writeJson(o.jsonPath, o, results);
  if (!o.csvPath.empty()) writeCsv(o.csvPath, results);
  if (!o.plotPath.empty()) {
    writePlot(o.plotPath, results, fmt::format("tutti-bench {}: {} ranks", o.collective, nranks));
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

}  // namespace
int runBenchmark(const BenchOptions& options, const Results* baseline) {
  const CollectiveSpec* spec = findCollective(options.collective);
  if (!spec) throw std::runtime_error("unknown collective " + options.collective);
  Comm comm;
  if (spec->rooted && !options.allRoots && options.root >= comm.size()) {
    if (comm.rank() == 0) {
      fmt::print(stderr, "tutti-bench: -r {}: root must be below the number of ranks ({})\n",
                 options.root, comm.size());
    }
    return 2;
  }
  std::vector<RankInfo> ranks = comm.gatherRanks();
  if (comm.rank() == 0 && !options.quiet) {
    for (const auto& note : options.notes) std::fprintf(stderr, "%s\n", note.c_str());
    std::fputs(formatPreamble(options, ranks).c_str(), stdout);
    std::fflush(stdout);
  }
  SweepOutcome sweep = runSweep(options, comm, *spec, baseline);
  std::fflush(stdout);
  if (comm.rank() != 0) return sweep.status;
  return finish(options, sweep, std::move(ranks), comm.size());
}

}  // namespace tutti::bench
