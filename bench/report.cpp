#include "bench/report.hpp"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

#include "base/config.hpp"
#include "runtime/collectives/autotune.hpp"

namespace tutti::bench {

int deviceNumber(const RankInfo& rank) {
  return rank.device >= 0 ? rank.device : rank.localRank;
}

const char* deviceKind(const RankInfo& rank) {
  return rank.device >= 0 ? "cuda" : "cpu";
}

// The formats in this file are nccl-tests' own, kept verbatim.
std::string printfString(const char* format, ...) {
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

Bandwidth bandwidth(size_t bytes, double seconds, double busFactor) {
  Bandwidth bw;
  if (seconds <= 0) return bw;
  bw.algbw = static_cast<double>(bytes) / 1.0e9 / seconds;
  bw.busbw = bw.algbw * busFactor;
  return bw;
}

std::string rankTransport(const BenchOptions& o, const std::vector<RankInfo>& ranks,
                          const RankInfo& r) {
  bool local = false, remote = false;
  for (const auto& peer : ranks) {
    if (peer.rank == r.rank) continue;
    (peer.host == r.host ? local : remote) = true;
  }
  return !o.transport.empty() ? o.transport : local && remote ? "shm+tcp" : remote ? "tcp" : "shm";
}

std::string formatPreamble(const BenchOptions& o, const std::vector<RankInfo>& ranks) {
  std::string out = printfString("# tutti-bench %s: tutti %d.%d.%d\n", o.collective.c_str(),
                                 TUTTI_VERSION_MAJOR, TUTTI_VERSION_MINOR, TUTTI_VERSION_PATCH);
  out += "# Command line: " + o.commandLine + "\n";
  out += printfString(
      "# nThread %d nGpus %d minBytes %ld maxBytes %ld step: %ld(%s) warmup iters: %d iters: %d "
      "agg iters: %d validation: %d graph: %d\n",
      1, 1, static_cast<long>(o.minBytes), static_cast<long>(o.maxBytes),
      static_cast<long>(o.stepBytes ? o.stepBytes : o.stepFactor), o.stepBytes ? "bytes" : "factor",
      o.warmupIters, o.iters, o.aggIters, o.check, 0);
  if (o.blocking) {
    out += "# Blocking Enabled: wait for completion and barrier after each collective \n";
  }
  out += printfString("# tutti: algorithm %s, transport %s, buffers %s\n",
                      o.algorithms.empty()      ? "auto"
                      : o.algorithms.size() > 1 ? "all"
                                                : o.algorithms[0].c_str(),
                      o.transport.empty() ? "default" : o.transport.c_str(), o.buffers.c_str());
  if (!o.tuning.empty()) out += "# tutti: tuning table " + o.tuning + "\n";
  const bool autoRuns = o.algorithms.empty() || std::find(o.algorithms.begin(), o.algorithms.end(),
                                                          "auto") != o.algorithms.end();
  if (o.collective == "allreduce" && autoRuns) {
    out += printfString(
        "# tutti: auto first runs %d untimed calls of each size: TUTTI_AUTOTUNE=%s's trial of the "
        "algorithms, where it runs\n",
        runtime::SizeTrial::longestCalls(), config::getString("TUTTI_AUTOTUNE").c_str());
  }
  out += "#\n# Using devices\n";
  for (const auto& r : ranks) {
    out += printfString("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s %s]\n", r.rank, 0,
                        r.pid, r.host.c_str(), deviceNumber(r), deviceKind(r),
                        rankTransport(o, ranks, r).c_str());
  }
  out += "#\n";
  return out;
}

std::string formatTableHeader(const std::vector<std::string>& algorithms, bool ratioColumn) {
  const size_t groups = std::max<size_t>(algorithms.size(), 1);
  std::string placements, names, units;
  for (size_t g = 0; g < groups; ++g) {
    if (algorithms.size() > 1) {
      placements += printfString("  %-62s", (algorithms[g] + ":  out-of-place / in-place").c_str());
    } else {
      placements += "           out-of-place                       in-place          ";
    }
    names += printfString("  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s", "time", "algbw", "busbw",
                          "#wrong", "time", "algbw", "busbw", "#wrong");
    units += printfString("  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s", "(us)", "(GB/s)", "(GB/s)",
                          "", "(us)", "(GB/s)", "(GB/s)", "");
  }
  std::string out =
      printfString("# %10s  %12s  %8s  %6s  %6s", "", "", "", "", "") + placements + "\n";
  out += printfString("# %10s  %12s  %8s  %6s  %6s", "size", "count", "type", "redop", "root") +
         names + (ratioColumn ? "   ratio\n" : "\n");
  out +=
      printfString("# %10s  %12s  %8s  %6s  %6s", "(B)", "(elements)", "", "", "") + units + "\n";
  return out;
}

std::string formatRowStart(size_t bytes, size_t count, const char* type, const char* op, int root) {
  return printfString("%12li  %12li  %8s  %6s  %6i", static_cast<long>(bytes),
                      static_cast<long>(count), type, op, root);
}

std::string formatTime(double us) {
  if (us >= 10000.0) return printfString("%7.0f", us);
  if (us >= 100.0) return printfString("%7.1f", us);
  return printfString("%7.2f", us);
}

std::string formatMeasurement(const Measurement& m) {
  std::string time = formatTime(m.seconds * 1.0e6);
  if (!m.wrong) {
    return printfString("  %7s  %6.2f  %6.2f  %5s", time.c_str(), m.bandwidth.algbw,
                        m.bandwidth.busbw, "N/A");
  }
  return printfString("  %7s  %6.2f  %6.2f  %5li", time.c_str(), m.bandwidth.algbw,
                      m.bandwidth.busbw, static_cast<long>(*m.wrong));
}

std::string formatIterationStats(size_t bytes, const char* placement, const IterationStats& s) {
  return printfString("#  -I %10ld B %-12s: min %s  p50 %s  p99 %s  max %s us  cv %.3f\n",
                      static_cast<long>(bytes), placement, formatTime(s.min * 1e6).c_str(),
                      formatTime(s.p50 * 1e6).c_str(), formatTime(s.p99 * 1e6).c_str(),
                      formatTime(s.max * 1e6).c_str(), s.cv);
}

std::string formatRounds(size_t bytes, const std::string& placement,
                         const std::vector<double>& seconds, double medianSeconds) {
  std::string times;
  for (double t : seconds) times += " " + formatTime(t * 1e6);
  return printfString("#  rounds %10ld B %-21s:%s us, median %s\n", static_cast<long>(bytes),
                      placement.c_str(), times.c_str(), formatTime(medianSeconds * 1e6).c_str());
}

std::string formatMemory(size_t sendBytes, size_t recvBytes, long peakResidentKiB) {
  return printfString(
      "# Memory: send buffer %ld B, receive buffer %ld B per rank; peak resident %ld KiB"
      " (largest rank)\n",
      static_cast<long>(sendBytes), static_cast<long>(recvBytes), peakResidentKiB);
}

std::string formatFooter(int64_t failedChecks, double avgBusBw) {
  std::string out = printfString("# Out of bounds values : %ld %s\n",
                                 static_cast<long>(failedChecks), failedChecks ? "FAILED" : "OK");
  out += printfString("# Avg bus bandwidth    : %g %s\n", avgBusBw, "");
  out += "#\n";
  return out;
}

}  // namespace tutti::bench
