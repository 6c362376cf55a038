#include "bench/nccl_tests_json.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <strings.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <fstream>
#include <stdexcept>

#include "bench/nccl_tests_report.hpp"

extern char** environ;

namespace tutti::bench {
namespace {

using Json = nlohmann::ordered_json;

bool asksForJson(const std::string& path) {
  const size_t dot = path.rfind('.');
  const size_t slash = path.rfind('/');
  if (dot == std::string::npos || (slash != std::string::npos && slash > dot)) return false;
  return strcasecmp(path.c_str() + dot + 1, "json") == 0;
}

// nccl-tests writes its booleans as the strings "true" and "false".
Json flag(bool value) {
  return value ? "true" : "false";
}

// nccl-tests writes the whole environment; a results file is shared, so the values of variables
// named like secrets (TUTTI_SECRET authenticates the rendezvous) are left out.
std::string redactedVariable(const std::string& entry) {
  const std::string name = entry.substr(0, entry.find('='));
  for (const char* word : {"SECRET", "TOKEN", "PASSWORD", "CREDENTIAL"}) {
    if (name.find(word) != std::string::npos) return name + "=<redacted>";
  }
  return entry;
}

Json placement(const Measurement& m, bool cpuTime) {
  return {{cpuTime ? "cpu_time" : "time", m.seconds * 1e6},
          {"alg_bw", m.bandwidth.algbw},
          {"bus_bw", m.bandwidth.busbw},
          {"nwrong", m.wrong ? Json(static_cast<double>(*m.wrong)) : Json(nullptr)}};
}

Json perIteration(const Measurement& m, int skipped) {
  const IterationStats& s = *m.iterationStats;
  Json times = Json::array();
  for (double t : m.iterationSeconds) times.push_back(t * 1e6);
  return {{"skipped_iterations", skipped}, {"min_us", s.min * 1e6},
          {"max_us", s.max * 1e6},         {"avg_us", s.mean * 1e6},
          {"p50_us", s.p50 * 1e6},         {"p95_us", s.p95 * 1e6},
          {"p99_us", s.p99 * 1e6},         {"stdev_us", s.stdev * 1e6},
          {"cv_pct", s.cv * 100},          {"times_us", times}};
}

Json config(const BenchOptions& o, const Results& r) {
  Json c = {{"nthreads", o.nccl.threads},
            {"ngpus", o.nccl.gpus},
            {"minimum_bytes", o.minBytes},
            {"maximum_bytes", o.maxBytes}};
  if (o.stepBytes) {
    c["step_bytes"] = o.stepBytes;
  } else {
    c["step_factor"] = o.stepFactor;
  }
  c["warmup_iters"] = o.warmupIters;
  c["iterations"] = o.iters;
  c["aggregated_iterations"] = o.aggIters;
  c["validation"] = o.check;
  c["graph"] = 0;
  c["blocking_collectives"] = flag(o.blocking != 0);
  c["per_iter_timing"] = flag(o.iterationStats);
  c["per_iter_skip"] = o.nccl.perIterSkip;
  c["parallel_init"] = flag(false);
  Json devices = Json::array();
  for (const RankInfo& rank : r.ranks) {
    devices.push_back({{"rank", rank.rank},
                       {"group", 0},
                       {"pid", rank.pid},
                       {"hostname", rank.host},
                       {"device", deviceNumber(rank)},
                       {"device_hex", deviceKind(rank)},
                       {"device_info", "tutti " + rankTransport(o, r.ranks, rank)}});
  }
  c["devices"] = devices;
  return c;
}

}  // namespace

std::optional<std::string> reserveNcclJson(const std::string& path, std::string& notice) {
  if (!asksForJson(path)) return std::nullopt;
  std::string candidate = path;
  for (int attempt = 0;; ++attempt) {
    const int fd = ::open(candidate.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ::close(fd);
      notice = fmt::format("# Writing JSON output to {}\n", candidate);
      return candidate;
    }
    if (errno != EEXIST) {
      notice = fmt::format("# skipping json output; {} not accessible\n", candidate);
      return std::nullopt;
    }
    candidate = fmt::format("{}.{}", path, attempt);
  }
}

std::string ncclJsonTime() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  char text[64] = {};
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", localtime_r(&now, &local));
  return text;
}

nlohmann::ordered_json ncclTestsJson(const BenchOptions& o, const Results& r,
                                     const std::string& startTime, const std::string& endTime,
                                     std::optional<double> minBusBw) {
  Json env = Json::array();
  for (char** e = environ; e && *e; ++e) env.push_back(redactedVariable(*e));
  Json results = Json::array();
  for (const ResultRow& row : r.rows) {
    Json entry = {{"size", row.bytes},
                  {"count", row.count},
                  {"type", row.type},
                  {"redop", row.op},
                  {"root", printfString("%6i", row.root)}};
    for (const auto& [key, m] :
         {std::pair{"out_of_place", &row.outOfPlace}, std::pair{"in_place", &row.inPlace}}) {
      entry[key] = placement(*m, o.nccl.cpuTime);
      if (m->iterationStats)
        entry[std::string(key) + "_per_iter"] = perIteration(*m, o.nccl.perIterSkip);
    }
    entry["actual_iterations"] = o.iters;
    entry["experiment_name"] = "";
    results.push_back(std::move(entry));
  }
  Json bandwidthOkay = minBusBw ? flag(!belowMinBusBw(r.avgBusBw, minBusBw)) : Json("unchecked");
  return {{"version", 3},
          {"start_time", startTime},
          {"args", o.args},
          {"env", env},
          {"nccl_version", tuttiVersionCode()},
          {"config", config(o, r)},
          {"results", results},
          {"out_of_bounds", {{"count", r.failedChecks}, {"okay", flag(r.failedChecks == 0)}}},
          {"average_bus_bandwidth", {{"bandwidth", r.avgBusBw}, {"okay", bandwidthOkay}}},
          {"errors", Json::array()},
          {"tutti",
           {{"collective", o.collective},
            {"algorithm", o.algorithms.empty() ? "auto" : o.algorithms.front()},
            {"buffers", o.buffers},
            {"transports", r.transports},
            {"cores", r.cores}}},
          {"end_time", endTime}};
}

void writeNcclJson(const std::string& path, const nlohmann::ordered_json& document) {
  std::ofstream out(path, std::ios::trunc);
  out << document.dump() << "\n";
  if (!out) throw std::runtime_error(fmt::format("cannot write {}", path));
}

}  // namespace tutti::bench
