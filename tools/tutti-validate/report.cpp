#include "tools/tutti-validate/report.hpp"

#include <fmt/format.h>

namespace tutti::validate {
namespace {

std::string subject(const Report& report, const Finding& finding) {
  if (finding.kind == Finding::Kind::kRail) return "rail " + finding.rail;
  const auto& names = report.hosts;
  const std::string onRail = finding.rail.empty() ? "" : " on rail " + finding.rail;
  return finding.kind == Finding::Kind::kLink
             ? fmt::format("link {}-{}{}", names[static_cast<size_t>(finding.a)],
                           names[static_cast<size_t>(finding.b)], onRail)
             : fmt::format("host {}{}", names[static_cast<size_t>(finding.a)], onRail);
}

const char* kindName(Finding::Kind kind) {
  switch (kind) {
    case Finding::Kind::kHost: return "host";
    case Finding::Kind::kLink: return "link";
    case Finding::Kind::kInventory: return "inventory";
    case Finding::Kind::kRail: return "rail";
  }
  return "?";
}

std::string pairsTable(const Report& report, const std::vector<PairResult>& pairs,
                       const std::vector<bool>& slow) {
  std::string out = fmt::format("# {:>16} {:>16} {:>10} {:>10} {:>10}\n", "host a", "host b",
                                "a->b GB/s", "b->a GB/s", "lat us");
  for (size_t i = 0; i < pairs.size(); ++i) {
    const PairResult& p = pairs[i];
    out +=
        fmt::format("  {:>16} {:>16} {:>10.3g} {:>10.3g} {:>10.3g}{}\n",
                    report.hosts[static_cast<size_t>(p.a)], report.hosts[static_cast<size_t>(p.b)],
                    p.gbsAtoB, p.gbsBtoA, p.latencyUs, slow[i] ? "  slow" : "");
  }
  return out;
}

nlohmann::json pairsJson(const std::vector<PairResult>& pairs, const std::vector<bool>& slow) {
  nlohmann::json json = nlohmann::json::array();
  for (size_t i = 0; i < pairs.size(); ++i) {
    const PairResult& p = pairs[i];
    json.push_back({{"a", p.a},
                    {"b", p.b},
                    {"gbs_a_to_b", p.gbsAtoB},
                    {"gbs_b_to_a", p.gbsBtoA},
                    {"latency_us", p.latencyUs},
                    {"slow", static_cast<bool>(slow[i])}});
  }
  return json;
}

// The finding that names `host`: one that blames it, else a link of it; nullptr when healthy.
const Finding* findingOf(const Report& report, size_t host) {
  const Finding* found = nullptr;
  for (const Finding& finding : report.verdict.findings) {
    if (static_cast<size_t>(finding.a) != host && static_cast<size_t>(finding.b) != host) continue;
    if (finding.kind != Finding::Kind::kLink) return &finding;
    if (!found) found = &finding;
  }
  return found;
}

}  // namespace

std::string formatReport(const Report& report) {
  std::string out;
  const Verdict& verdict = report.verdict;
  if (verdict.healthy())
    out += fmt::format(
        "healthy: {} hosts, {} pairs within {:.0f}% of the median bandwidth and "
        "{:.1f}x the median latency\n",
        report.hosts.size(), report.pairs.size(), 100 * report.thresholds.minBandwidthFraction,
        report.thresholds.maxLatencyFactor);
  for (const Finding& finding : verdict.findings)
    out += fmt::format("suspect {}: {}\n", subject(report, finding), finding.reason);
  out += "\n";
  for (size_t host = 0; host < report.hosts.size(); ++host) {
    const Finding* finding = findingOf(report, host);
    out += fmt::format("{} | {}\n", report.hosts[host],
                       finding ? "suspect: " + subject(report, *finding) : "healthy");
  }
  out += fmt::format("\n# median {:.3g} GB/s per direction, {:.3g} us latency\n", verdict.medianGBs,
                     verdict.medianLatencyUs);
  out += pairsTable(report, report.pairs, verdict.slow);
  if (report.allreduceBusGBs)
    out += fmt::format("# all-reduce over {} hosts: busbw {:.3g} GB/s\n", report.hosts.size(),
                       *report.allreduceBusGBs);
  for (const RailResult& rail : report.rails) {
    out += fmt::format("# all-reduce over rail {}: busbw {:.3g} GB/s{}\n", rail.name,
                       rail.allreduceBusGBs, rail.slow ? "  slow" : "");
    if (!rail.pairs.empty()) out += pairsTable(report, rail.pairs, rail.slowPairs);
  }
  return out;
}

nlohmann::json reportJson(const Report& report) {
  nlohmann::json json;
  json["schema"] = "tutti-validate/1";
  json["mode"] = report.mode;
  json["healthy"] = report.verdict.healthy();
  json["thresholds"] = {{"min_bandwidth_fraction", report.thresholds.minBandwidthFraction},
                        {"max_latency_factor", report.thresholds.maxLatencyFactor}};
  json["median"] = {{"gbs", report.verdict.medianGBs},
                    {"latency_us", report.verdict.medianLatencyUs}};
  json["hosts"] = nlohmann::json::array();
  for (size_t host = 0; host < report.hosts.size(); ++host) {
    json["hosts"].push_back({{"rank", host},
                             {"name", report.hosts[host]},
                             {"status", findingOf(report, host) ? "suspect" : "healthy"}});
  }
  json["findings"] = nlohmann::json::array();
  for (const Finding& finding : report.verdict.findings) {
    nlohmann::json entry = {{"kind", kindName(finding.kind)},
                            {"subject", subject(report, finding)},
                            {"reason", finding.reason},
                            {"hosts", nlohmann::json::array()}};
    for (int host : {finding.a, finding.b})
      if (host >= 0) entry["hosts"].push_back(host);
    if (!finding.rail.empty()) entry["rail"] = finding.rail;
    json["findings"].push_back(entry);
  }
  json["pairs"] = pairsJson(report.pairs, report.verdict.slow);
  if (report.allreduceBusGBs) json["allreduce_busbw_gbs"] = *report.allreduceBusGBs;
  json["rails"] = nlohmann::json::array();
  for (const RailResult& rail : report.rails)
    json["rails"].push_back({{"name", rail.name},
                             {"allreduce_busbw_gbs", rail.allreduceBusGBs},
                             {"slow", rail.slow},
                             {"pairs", pairsJson(rail.pairs, rail.slowPairs)}});
  return json;
}

}  // namespace tutti::validate
