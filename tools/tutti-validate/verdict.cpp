#include "tools/tutti-validate/verdict.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace tutti::validate {
namespace {

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

double percentOf(double value, double whole) {
  return whole > 0 ? 100 * value / whole : 0;
}

struct Judge {
  const std::vector<std::string>& names;
  const std::vector<PairResult>& pairs;
  const Thresholds& thresholds;
  Verdict verdict;

  bool slowBandwidth(double gbs) const {
    return gbs < thresholds.minBandwidthFraction * verdict.medianGBs;
  }
  bool slowLatency(double us) const {
    return us > thresholds.maxLatencyFactor * verdict.medianLatencyUs;
  }

  // Why pair p is slow, from host `from`'s side when given ("h1->h3 at 31% ...").
  std::string pairReason(const PairResult& p) const {
    std::vector<std::string> parts;
    auto direction = [&](int from, int to, double gbs) {
      if (slowBandwidth(gbs))
        parts.push_back(fmt::format("{}->{} at {:.0f}% of median ({:.3g} vs {:.3g} GB/s)",
                                    names[from], names[to], percentOf(gbs, verdict.medianGBs), gbs,
                                    verdict.medianGBs));
    };
    direction(p.a, p.b, p.gbsAtoB);
    direction(p.b, p.a, p.gbsBtoA);
    if (slowLatency(p.latencyUs))
      parts.push_back(fmt::format("latency {:.1f}x median ({:.3g} vs {:.3g} us)",
                                  p.latencyUs / verdict.medianLatencyUs, p.latencyUs,
                                  verdict.medianLatencyUs));
    std::string text;
    for (const std::string& part : parts) text += (text.empty() ? "" : ", ") + part;
    return text;
  }

  void run() {
    std::vector<double> directions, latencies;
    for (const PairResult& p : pairs) {
      directions.push_back(p.gbsAtoB);
      directions.push_back(p.gbsBtoA);
      latencies.push_back(p.latencyUs);
    }
    verdict.medianGBs = median(directions);
    verdict.medianLatencyUs = median(latencies);
    const int hosts = static_cast<int>(names.size());
    std::vector<int> measured(static_cast<size_t>(hosts)), slowCount(static_cast<size_t>(hosts));
    for (const PairResult& p : pairs) {
      const bool slow =
          slowBandwidth(p.gbsAtoB) || slowBandwidth(p.gbsBtoA) || slowLatency(p.latencyUs);
      verdict.slow.push_back(slow);
      for (int host : {p.a, p.b}) {
        ++measured[static_cast<size_t>(host)];
        slowCount[static_cast<size_t>(host)] += slow;
      }
    }
    auto blamed = [&](int host) {
      const auto h = static_cast<size_t>(host);
      return measured[h] >= 2 && slowCount[h] == measured[h];
    };
    for (int host = 0; host < hosts; ++host) {
      if (!blamed(host)) continue;
      std::string reasons;
      for (size_t i = 0; i < pairs.size(); ++i)
        if (pairs[i].a == host || pairs[i].b == host)
          reasons += (reasons.empty() ? "" : "; ") + pairReason(pairs[i]);
      verdict.findings.push_back(
          {Finding::Kind::kHost, host, -1, fmt::format("every pair slow ({})", reasons)});
    }
    for (size_t i = 0; i < pairs.size(); ++i) {
      const PairResult& p = pairs[i];
      if (!verdict.slow[i] || blamed(p.a) || blamed(p.b)) continue;
      const bool placed =
          measured[static_cast<size_t>(p.a)] >= 2 && measured[static_cast<size_t>(p.b)] >= 2;
      verdict.findings.push_back(
          {Finding::Kind::kLink, p.a, p.b,
           fmt::format(
               "{}; {}", pairReason(p),
               placed ? fmt::format("every other pair of {} and {} normal", names[p.a], names[p.b])
                      : std::string("no other pair of theirs measured: the host or the "
                                    "link"))});
    }
  }
};

}  // namespace

Verdict judge(const std::vector<std::string>& names, const std::vector<PairResult>& pairs,
              const Thresholds& thresholds) {
  Judge judge{names, pairs, thresholds, {}};
  judge.run();
  return std::move(judge.verdict);
}

RailChoice chooseRails(const std::vector<std::vector<NetInterface>>& interfacesPerHost,
                       const std::vector<std::string>& wanted) {
  RailChoice choice;
  if (interfacesPerHost.empty()) return choice;
  std::vector<std::string> candidates = wanted;
  if (wanted.empty())
    for (const NetInterface& first : interfacesPerHost[0]) candidates.push_back(first.name);
  for (const std::string& name : candidates) {
    std::vector<int> lacking;
    std::map<std::string, int> firstWith;  // address -> the first host that has it
    std::optional<std::pair<int, int>> shared;
    for (size_t host = 0; host < interfacesPerHost.size(); ++host) {
      const auto& list = interfacesPerHost[host];
      const auto found = std::find_if(list.begin(), list.end(),
                                      [&](const NetInterface& i) { return i.name == name; });
      if (found == list.end()) {
        lacking.push_back(static_cast<int>(host));
      } else if (const auto [at, added] = firstWith.emplace(found->address, host); !added) {
        if (!shared) shared = {at->second, static_cast<int>(host)};
      }
    }
    if (lacking.empty() && !shared) choice.rails.push_back(name);
    if (wanted.empty()) continue;
    for (int host : lacking)
      choice.refused.push_back(
          {Finding::Kind::kInventory, host, -1,
           fmt::format("no interface {} (a rail asked for with --rails) is up with an address",
                       name),
           name});
    if (shared)
      choice.refused.push_back(
          {Finding::Kind::kRail, -1, -1,
           fmt::format("not measured: hosts of ranks {} and {} give {} the same address, so it "
                       "reaches no other host",
                       shared->first, shared->second, name),
           name});
  }
  std::sort(choice.rails.begin(), choice.rails.end());
  if (wanted.empty() && choice.rails.size() < 2) choice.rails.clear();
  return choice;
}

std::vector<Finding> judgeRails(std::vector<RailResult>& rails, const Thresholds& thresholds) {
  std::vector<Finding> findings;
  if (rails.size() < 2) return findings;
  // Beside the others only: a median that held the rail itself would be, with two rails, their
  // mean, and a rail at a fifth of the other would show at a third of it.
  for (RailResult& rail : rails) {
    std::vector<double> others;
    for (const RailResult& other : rails)
      if (&other != &rail) others.push_back(other.allreduceBusGBs);
    const double middle = median(others);
    rail.slow = rail.allreduceBusGBs < thresholds.minBandwidthFraction * middle;
    if (rail.slow)
      findings.push_back(
          {Finding::Kind::kRail, -1, -1,
           fmt::format("all-reduce at {:.0f}% of the other rails' median ({:.3g} vs {:.3g} GB/s "
                       "busbw)",
                       percentOf(rail.allreduceBusGBs, middle), rail.allreduceBusGBs, middle),
           rail.name});
  }
  return findings;
}

std::vector<Round> retestRounds(int hosts, const std::vector<PairResult>& pairs,
                                const Verdict& verdict) {
  std::vector<int> measured(static_cast<size_t>(hosts));
  std::vector<bool> good(static_cast<size_t>(hosts), true);
  std::set<Pair> done;
  for (size_t i = 0; i < pairs.size(); ++i) {
    for (int host : {pairs[i].a, pairs[i].b}) {
      ++measured[static_cast<size_t>(host)];
      if (verdict.slow[i]) good[static_cast<size_t>(host)] = false;
    }
    done.insert({pairs[i].a, pairs[i].b});
  }
  // Each host of a slow pair with no other measurement, with a good host it has not met.
  std::vector<Pair> wanted;
  std::vector<int> goodHosts;
  for (int host = 0; host < hosts; ++host)
    if (good[static_cast<size_t>(host)] && measured[static_cast<size_t>(host)] > 0)
      goodHosts.push_back(host);
  size_t next = 0;
  for (size_t i = 0; i < pairs.size(); ++i) {
    if (!verdict.slow[i]) continue;
    for (int host : {pairs[i].a, pairs[i].b}) {
      if (measured[static_cast<size_t>(host)] >= 2 || goodHosts.empty()) continue;
      for (size_t tried = 0; tried < goodHosts.size(); ++tried) {
        const int partner = goodHosts[(next + tried) % goodHosts.size()];
        const Pair pair{std::min(host, partner), std::max(host, partner)};
        if (partner == host || done.count(pair)) continue;
        wanted.push_back(pair);
        done.insert(pair);
        next = (next + tried + 1) % goodHosts.size();
        break;
      }
    }
  }
  return packRounds(wanted);
}

std::vector<Round> confirmRounds(const std::vector<PairResult>& pairs, const Verdict& verdict) {
  std::vector<Pair> slow;
  for (size_t i = 0; i < pairs.size(); ++i)
    if (verdict.slow[i]) slow.push_back({pairs[i].a, pairs[i].b});
  return packRounds(slow);
}

void keepBest(std::vector<PairResult>& pairs, const std::vector<PairResult>& again) {
  for (const PairResult& second : again)
    for (PairResult& first : pairs)
      if (first.a == second.a && first.b == second.b) {
        first.gbsAtoB = std::max(first.gbsAtoB, second.gbsAtoB);
        first.gbsBtoA = std::max(first.gbsBtoA, second.gbsBtoA);
        first.latencyUs = std::min(first.latencyUs, second.latencyUs);
      }
}

}  // namespace tutti::validate
