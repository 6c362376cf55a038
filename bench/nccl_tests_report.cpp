#include "bench/nccl_tests_report.hpp"

#include <tutti/tutti.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace tutti::bench {
int tuttiVersionCode() {
  return TUTTI_VERSION_MAJOR * 10000 + TUTTI_VERSION_MINOR * 100 + TUTTI_VERSION_PATCH;
}

bool safeForScrapers(const std::string& line) {
  for (const char* word : {"failed", "bandwidth", "out of bounds"}) {
    auto lower = [](char c) {
      return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    };
    auto match = std::search(line.begin(), line.end(), word, word + std::strlen(word),
                             [&](char a, char b) { return lower(a) == b; });
    if (match != line.end()) return false;
  }
  return true;
}

void printEcho(const std::string& lines) {
  for (size_t start = 0; start < lines.size();) {
    size_t end = lines.find('\n', start);
    end = end == std::string::npos ? lines.size() : end + 1;
    const std::string line = lines.substr(start, end - start);
    std::fputs(line.c_str(), safeForScrapers(line) ? stdout : stderr);
    start = end;
  }
}

std::string fitNumber(double value, int width) {
  for (const char* format : {"%*.2f", "%*.1f", "%*.0f"}) {
    std::string text = printfString(format, width, value);
    if (static_cast<int>(text.size()) <= width) return text;
  }
  return printfString(width >= 7 ? "%*.1e" : "%*.0e", width, value).substr(0, width);
}

std::string formatNcclPreamble(const BenchOptions& o, const std::vector<RankInfo>& ranks) {
  std::string out = printfString("# nccl-tests version %s nccl-headers=%d nccl-library=%d\n",
                                 kNcclTestsVersion, tuttiVersionCode(), tuttiVersionCode());
  out += printfString("# Collective test starting: %s\n", o.nccl.program.c_str());
  out += printfString(
      "# nThread %d nGpus %d minBytes %ld maxBytes %ld step: %ld(%s) warmup iters: %d iters: %d "
      "agg iters: %d validation: %d graph: %d unalign: %d\n",
      o.nccl.threads, o.nccl.gpus, static_cast<long>(o.minBytes), static_cast<long>(o.maxBytes),
      static_cast<long>(o.stepBytes ? o.stepBytes : o.stepFactor), o.stepBytes ? "bytes" : "factor",
      o.warmupIters, o.iters, o.aggIters, o.check, 0, o.misaligned ? o.unalign : 0);
  if (o.blocking == 1) {
    out += "# Blocking Enabled: wait and barrier after each inner iteration (-m) \n";
  } else if (o.blocking == 2) {
    out += "# Blocking Enabled: wait after each inner iteration (-m), no barrier \n";
  } else if (o.blocking == 3) {
    out +=
        "# Blocking Enabled: wait and barrier after each outer iteration (-n); time excludes "
        "barrier \n";
  }
  if (o.iterationStats) {
    out += "# Per-Iteration Report: host clock timing; i_* uses max over process rows";
    if (o.nccl.perIterSkip) {
      out += printfString("; summary skips first %d iterations", o.nccl.perIterSkip);
    }
    out += " \n";
  }
  out += "#\n# Using devices\n";
  for (const auto& r : ranks) {
    out += printfString("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] tutti %s\n", r.rank,
                        0, r.pid, r.host.c_str(), deviceNumber(r), deviceKind(r),
                        rankTransport(o, ranks, r).c_str());
  }
  return out;
}

std::string formatNcclTableHeader(const BenchOptions& o) {
  const char* time = o.nccl.cpuTime ? "cputime" : "time";
  const bool perIteration = o.iterationStats;
  // One placement's column titles: {time, algbw, busbw, #wrong} (+ -I's four).
  auto placement = [&](bool names) {
    std::string out =
        printfString("  %7s  %6s  %6s  %6s", names ? time : "(us)", names ? "algbw" : "(GB/s)",
                     names ? "busbw" : "(GB/s)", names ? "#wrong" : "");
    if (perIteration) {
      out +=
          printfString("  %7s  %7s  %7s  %7s", names ? "i_min" : "(us)", names ? "i_max" : "(us)",
                       names ? "i_p99" : "(us)", names ? "i_cv%" : "(%)");
    }
    return out;
  };
  auto line = [&](bool names) {
    return printfString("# %10s  %12s  %8s  %6s  %6s", names ? "size" : "(B)",
                        names ? "count" : "(elements)", names ? "type" : "", names ? "redop" : "",
                        names ? "root" : "") +
           placement(names) + placement(names) +
           printfString(" %*s\n", o.nccl.timestamps ? 19 : 0,
                        !o.nccl.timestamps ? ""
                        : names            ? "timestamp"
                                           : "%Y-%m-%d %H:%M:%S");
  };
  std::string out = "#\n" + printfString("# %10s  %12s  %8s  %6s  %6s", "", "", "", "", "");
  out += perIteration ? "              out-of-place (+ per-iteration)                         "
                        "       in-place (+ per-iteration)\n"
                      : "           out-of-place                       in-place          \n";
  return out + line(true) + line(false);
}

std::string formatNcclMeasurement(const Measurement& m) {
  std::string out = printfString("  %7s  %6s  %6s", fitNumber(m.seconds * 1e6, 7).c_str(),
                                 fitNumber(m.bandwidth.algbw, 6).c_str(),
                                 fitNumber(m.bandwidth.busbw, 6).c_str());
  out += m.wrong ? printfString("  %6g", static_cast<double>(*m.wrong)) : "    N/A";
  if (const auto& s = m.iterationStats) {
    out += printfString("  %7s  %7s  %7s  %7s", fitNumber(s->min * 1e6, 7).c_str(),
                        fitNumber(s->max * 1e6, 7).c_str(), fitNumber(s->p99 * 1e6, 7).c_str(),
                        fitNumber(s->cv * 100, 7).c_str());
  }
  return out;
}

std::string formatNcclTimestamp() {
  const std::time_t now = std::time(nullptr);
  char text[64] = {};
  std::tm local{};
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", localtime_r(&now, &local));
  return printfString("%21s", text);
}

std::optional<double> ncclTestsMinBusBw() {
  const char* value = std::getenv("NCCL_TESTS_MIN_BW");
  if (!value) return std::nullopt;
  return std::atof(value);  // as nccl-tests reads it: junk is 0, which every run passes
}

bool belowMinBusBw(double avgBusBw, std::optional<double> minBusBw) {
  return minBusBw && avgBusBw < *minBusBw * 0.9;
}

int ncclTestsStatus(int64_t failedChecks, double avgBusBw, std::optional<double> minBusBw) {
  return failedChecks || belowMinBusBw(avgBusBw, minBusBw) ? kNcclTestsFailed : 0;
}

std::string formatNcclFooter(int64_t failedChecks, double avgBusBw, std::optional<double> minBusBw,
                             const std::string& program) {
  std::string out = printfString("# %-20s : %ld %s\n", "Out of bounds values",
                                 static_cast<long>(failedChecks), failedChecks ? "FAILED" : "OK");
  out += printfString("# %-20s : %g %s\n", "Avg bus bandwidth", avgBusBw,
                      !minBusBw                           ? ""
                      : belowMinBusBw(avgBusBw, minBusBw) ? "FAILED"
                                                          : "OK");
  out += "#\n";
  out += printfString("# Collective test concluded: %s\n", program.c_str());
  return out;
}

std::string formatNcclEnd() {
  return "#\n\n";
}

}  // namespace tutti::bench
