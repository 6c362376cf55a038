// tutti-bench's report, in nccl-tests' layout to the character (the printf formats of its
// common.cu), so that scripts scraping all_reduce_perf output read ours. Pure formatting: the
// numbers come from the measurement code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/iteration_stats.hpp"
#include "bench/options.hpp"

namespace tutti::bench {

struct RankInfo {
  int rank = 0;
  int localRank = 0;
  int pid = 0;
  std::string host;
  int device = -1;  // the GPU its buffers live on; -1: host memory
};
// The device column of "Using devices": the GPU, or the local rank for host buffers; and its kind.
int deviceNumber(const RankInfo& rank);
const char* deviceKind(const RankInfo& rank);

struct Bandwidth {
  double algbw = 0;  // GB/s (1e9 bytes)
  double busbw = 0;
};

// printf into a std::string (the report formats are nccl-tests' printf formats).
[[gnu::format(printf, 1, 2)]] std::string printfString(const char* format, ...);

// algbw = bytes / time (bytes: the whole array S); busbw = algbw * the collective's factor.
Bandwidth bandwidth(size_t bytes, double seconds, double busFactor);

// The transport rank r uses to its peers: --transport's, or shm within its host and tcp across.
std::string rankTransport(const BenchOptions& options, const std::vector<RankInfo>& ranks,
                          const RankInfo& r);
// The "#" lines before the table: command line, settings, one line per rank.
std::string formatPreamble(const BenchOptions& options, const std::vector<RankInfo>& ranks);
// The three header lines of the table: nccl-tests' own, or with one column group (out-of-place
// and in-place) per named algorithm, side by side.
// With ratioColumn, a last column "ratio" (--compare).
std::string formatTableHeader(const std::vector<std::string>& algorithms = {},
                              bool ratioColumn = false);
// "        size         count      type   redop    root" of one row.
std::string formatRowStart(size_t bytes, size_t count, const char* type, const char* op, int root);

struct Measurement {
  double seconds = 0;  // average time of one operation
  Bandwidth bandwidth;
  std::optional<int64_t> wrong;  // nullopt: not checked ("N/A")
  double maxSeconds = 0;         // the slowest rank's time (recorded whatever -a says)
  // -I under a *_perf name: each iteration's time (the slowest rank's), and their statistics
  // without the -K first ones.
  std::vector<double> iterationSeconds = {};
  std::optional<IterationStats> iterationStats = std::nullopt;
};
// One placement's columns: "     time   algbw   busbw #wrong".
std::string formatMeasurement(const Measurement& m);
// nccl-tests' time column: %7.0f from 10 ms, %7.1f from 100 us, else %7.2f (microseconds).
std::string formatTime(double microseconds);

// -I: "#  -I <bytes> B <placement>: min .. p50 .. p99 .. max .. us, cv .." (a comment line, so
// that scrapers skip it).
std::string formatIterationStats(size_t bytes, const char* placement, const IterationStats& s);
// --rounds with --verbose: "#  rounds <bytes> B <placement>: <each round's time> us, median <t>"
// (a comment line, like -I's).
std::string formatRounds(size_t bytes, const std::string& placement,
                         const std::vector<double>& seconds, double medianSeconds);
// -M: "# Memory: ..." per rank.
std::string formatMemory(size_t sendBytes, size_t recvBytes, long peakResidentKiB);

// failedChecks: the number of (size, placement) checks that found wrong values, as nccl-tests
// counts them; avgBusBw: the mean busbw over every measurement.
std::string formatFooter(int64_t failedChecks, double avgBusBw);

}  // namespace tutti::bench
