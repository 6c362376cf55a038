// Verdicts relative to the cluster, not to magic numbers: a pair of hosts is slow when its
// bandwidth in either direction is below a fraction of the median of every measured direction,
// or its latency above a multiple of the median latency (defaults as NVIDIA ClusterKit's: 93% and
// 2.1x). A host is blamed when every pair it was measured in (at least two) is slow; a slow pair
// whose two hosts each have a normal pair is blamed on the link between them. Where a pair is the
// only measurement of a host (quick mode), its hosts are retested against hosts whose pairs were
// all normal (Google's cluster-health-scanner's second pass), so that the blame can be placed.
// Relative verdicts need a healthy majority: with half the cluster slow, the median is too.
#pragma once

#include <string>
#include <vector>

#include "tools/tutti-validate/pairing.hpp"

namespace tutti::validate {

struct Thresholds {
  double minBandwidthFraction = 0.93;  // of the median direction
  double maxLatencyFactor = 2.1;       // of the median pair
};

// One pair's measurements (a < b).
struct PairResult {
  int a = 0, b = 0;
  double gbsAtoB = 0, gbsBtoA = 0;
  double latencyUs = 0;  // half a round trip of a small message
};

struct Finding {
  // kHost: its pairs are slow; kLink: one pair is; kInventory: what the host has (inventory.hpp);
  // kRail: a rail's all-reduce is slow beside the other rails' (no host: a = -1).
  enum class Kind { kHost, kLink, kInventory, kRail } kind;
  int a = 0, b = -1;      // the host, or the link's two hosts
  std::string reason;     // "every pair slow: sends at 12% of median (...)"
  std::string rail = {};  // the rail (its interface) it was seen on; empty: the job's own network
};

struct Verdict {
  double medianGBs = 0;
  double medianLatencyUs = 0;
  std::vector<bool> slow;  // per PairResult, in the order given
  std::vector<Finding> findings;
  bool healthy() const { return findings.empty(); }
};

// One rail: the same network interface on every host (as NCCL's rail-aligned rings use the same
// NIC index on every host), its all-reduce over every host, and where it was slow the pairs that
// placed the blame.
struct RailResult {
  std::string name;
  double allreduceBusGBs = 0;
  bool slow = false;
  std::vector<PairResult> pairs = {};
  std::vector<bool> slowPairs = {};  // per pair
};

// A network interface of a host that could carry a rail, with its address.
struct NetInterface {
  std::string name;
  std::string address;
};
// The rails to measure, from every host's interfaces: those of `wanted`, or with `wanted` empty
// every interface all hosts have, when two or more qualify. A rail must be on every host, with a
// different address on each: an interface with one address everywhere (docker0's 172.17.0.1)
// reaches no other host. A wanted one that fails either is not measured, and is a finding: an
// inventory finding for each host that lacks it, a rail finding for a shared address.
struct RailChoice {
  std::vector<std::string> rails;
  std::vector<Finding> refused;
};
RailChoice chooseRails(const std::vector<std::vector<NetInterface>>& interfacesPerHost,
                       const std::vector<std::string>& wanted);
// Marks each rail slow whose all-reduce is below the bandwidth fraction of the other rails' median
// (two rails or more); one kRail finding for each.
std::vector<Finding> judgeRails(std::vector<RailResult>& rails, const Thresholds& thresholds);

// `names` label the hosts in reasons.
Verdict judge(const std::vector<std::string>& names, const std::vector<PairResult>& pairs,
              const Thresholds& thresholds);
// The slow pairs, to measure once more before anything is blamed: a busy host's one bad
// measurement is noise, not a finding (health checks repeat a failing test before they report).
std::vector<Round> confirmRounds(const std::vector<PairResult>& pairs, const Verdict& verdict);
// Each pair of `pairs` measured again in `again` keeps the better of its two measurements per
// direction (and the lower latency): slow only if slow both times.
void keepBest(std::vector<PairResult>& pairs, const std::vector<PairResult>& again);
// Pairs to measure next so that each host of a slow pair that has no other measurement meets a
// host whose pairs were all normal; disjoint rounds, empty when nothing needs a second pass.
std::vector<Round> retestRounds(int hosts, const std::vector<PairResult>& pairs,
                                const Verdict& verdict);

}  // namespace tutti::validate
