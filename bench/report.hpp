// tutti-bench's report, in nccl-tests' layout to the character (the printf formats of its
// common.cu), so that scripts scraping all_reduce_perf output read ours. Pure formatting: the
// numbers come from the measurement code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/options.hpp"

namespace tutti::bench {

struct RankInfo {
  int rank = 0;
  int localRank = 0;
  int pid = 0;
  std::string host;
};

struct Bandwidth {
  double algbw = 0;  // GB/s (1e9 bytes)
  double busbw = 0;
};

// algbw = bytes / time; busbw = algbw * 2(n-1)/n (all-reduce).
Bandwidth allreduceBandwidth(size_t bytes, double seconds, int nranks);

// The "#" lines before the table: command line, settings, one line per rank.
std::string formatPreamble(const BenchOptions& options, const std::vector<RankInfo>& ranks);
// The three header lines of the table.
std::string formatTableHeader();
// "        size         count      type   redop    root" of one row.
std::string formatRowStart(size_t bytes, size_t count, const char* type, const char* op, int root);

struct Measurement {
  double seconds = 0;  // average time of one operation
  Bandwidth bandwidth;
  std::optional<int64_t> wrong;  // nullopt: not checked ("N/A")
};
// One placement's columns: "     time   algbw   busbw #wrong".
std::string formatMeasurement(const Measurement& m);
// nccl-tests' time column: %7.0f from 10 ms, %7.1f from 100 us, else %7.2f (microseconds).
std::string formatTime(double microseconds);

// failedChecks: the number of (size, placement) checks that found wrong values, as nccl-tests
// counts them; avgBusBw: the mean busbw over every measurement.
std::string formatFooter(int64_t failedChecks, double avgBusBw);

}  // namespace tutti::bench
