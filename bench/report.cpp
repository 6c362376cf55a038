#include "bench/report.hpp"

#include <cstdarg>
#include <cstdio>

namespace tutti::bench {
namespace {

// printf into a std::string: the formats below are nccl-tests' own, kept verbatim.
[[gnu::format(printf, 1, 2)]] std::string sprintf(const char* format, ...) {
  va_list args, copy;
  va_start(args, format);
  va_copy(copy, args);
  int length = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string out(static_cast<size_t>(length > 0 ? length : 0), '\0');
  std::vsnprintf(out.data(), out.size() + 1, format, args);
  va_end(args);
  return out;
}

}  // namespace

Bandwidth allreduceBandwidth(size_t bytes, double seconds, int nranks) {
  Bandwidth bw;
  if (seconds <= 0) return bw;
  bw.algbw = static_cast<double>(bytes) / 1.0e9 / seconds;
  bw.busbw = bw.algbw * (2.0 * (nranks - 1)) / nranks;
  return bw;
}

std::string formatPreamble(const BenchOptions& o, const std::vector<RankInfo>& ranks) {
  std::string out = sprintf("# tutti-bench %s: tutti %d.%d.%d\n", o.collective.c_str(),
                            TUTTI_VERSION_MAJOR, TUTTI_VERSION_MINOR, TUTTI_VERSION_PATCH);
  out += "# Command line: " + o.commandLine + "\n";
  out += sprintf(
      "# nThread %d nGpus %d minBytes %ld maxBytes %ld step: %ld(%s) warmup iters: %d iters: %d "
      "agg iters: %d validation: %d graph: %d\n",
      1, 1, static_cast<long>(o.minBytes), static_cast<long>(o.maxBytes),
      static_cast<long>(o.stepBytes ? o.stepBytes : o.stepFactor), o.stepBytes ? "bytes" : "factor",
      o.warmupIters, o.iters, 1, o.check, 0);
  if (o.blocking) {
    out += "# Blocking Enabled: wait for completion and barrier after each collective \n";
  }
  out += "#\n# Using devices\n";
  for (const auto& r : ranks) {
    out += sprintf("#  Rank %2d Group %2d Pid %6d on %10s device %2d [cpu]\n", r.rank, 0, r.pid,
                   r.host.c_str(), r.localRank);
  }
  out += "#\n";
  return out;
}

std::string formatTableHeader() {
  std::string out = sprintf(
      "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          "
      "\n",
      "", "", "", "", "");
  out += sprintf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n", "size",
                 "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
                 "algbw", "busbw", "#wrong");
  out += sprintf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)",
                 "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
                 "(GB/s)", "");
  return out;
}

std::string formatRowStart(size_t bytes, size_t count, const char* type, const char* op, int root) {
  return sprintf("%12li  %12li  %8s  %6s  %6i", static_cast<long>(bytes), static_cast<long>(count),
                 type, op, root);
}

std::string formatTime(double us) {
  if (us >= 10000.0) return sprintf("%7.0f", us);
  if (us >= 100.0) return sprintf("%7.1f", us);
  return sprintf("%7.2f", us);
}

std::string formatMeasurement(const Measurement& m) {
  std::string time = formatTime(m.seconds * 1.0e6);
  if (!m.wrong) {
    return sprintf("  %7s  %6.2f  %6.2f  %5s", time.c_str(), m.bandwidth.algbw, m.bandwidth.busbw,
                   "N/A");
  }
  return sprintf("  %7s  %6.2f  %6.2f  %5li", time.c_str(), m.bandwidth.algbw, m.bandwidth.busbw,
                 static_cast<long>(*m.wrong));
}

std::string formatFooter(int64_t failedChecks, double avgBusBw) {
  std::string out = sprintf("# Out of bounds values : %ld %s\n", static_cast<long>(failedChecks),
                            failedChecks ? "FAILED" : "OK");
  out += sprintf("# Avg bus bandwidth    : %g %s\n", avgBusBw, "");
  out += "#\n";
  return out;
}

}  // namespace tutti::bench
