// The all-reduce cost of each algorithm the topology plans: latency + bytes / bandwidth, as
// NCCL's tuning model prices it (src/graph/tuning.cc, Simple protocol), with the bandwidths of
// tutti's own plan.
//
// Ring: 2(n-1) steps, each moving bytes/n over every channel at once, so the ring's total
// bandwidth B (the channels' sum, already the narrowest share of every link) gives
// algbw = B n / (2(n-1)) and busbw = B. Of the steps, 2(hosts-1) cross the network.
// Tree (across hosts): NCCL's double binary tree carries half the data in each tree, up and
// down, so algbw = (sum of the trees' bandwidths) / 2 (trees on one NIC count once); its latency is
// a chain through each host's GPUs and log2(hosts) network hops, both ways.
//
// Latencies per step are NCCL's published defaults for the Simple protocol (tuning.cc: a base
// of 8.4 us per call, a step of 3.4 us over NVLink, 5.7 us over PCIe, 14 us over the network),
// chosen by the path type of the hops: they set the small-size end only and are not
// calibrated on any machine (the tuning table's calibration belongs to the performance work).
#include <algorithm>
#include <cmath>
#include <map>

#include "topology/topology.hpp"

namespace tutti::topology {
namespace {

constexpr double kBaseUs = 8.4;
constexpr double kNvLinkStepUs = 3.4;
constexpr double kPcieStepUs = 5.7;
constexpr double kNetStepUs = 14.0;

// One step between GPUs of a host whose farthest hop is of this type.
double stepUs(PathType type) {
  return type <= PathType::kNvb ? kNvLinkStepUs : kPcieStepUs;
}

double busBwFactor(int ranks) {
  return 2.0 * (ranks - 1) / ranks;
}

}  // namespace

double AlgorithmCost::timeUs(double bytes) const {
  return latencyUs + bytes / (algBw * 1e3);  // GB/s = 1e3 bytes per us
}

double AlgorithmCost::busBwAt(double bytes, int ranks) const {
  return bytes * busBwFactor(ranks) / timeUs(bytes) / 1e3;
}

const AlgorithmCost* AllReduceCosts::best(double bytes) const {
  const AlgorithmCost* quickest = nullptr;
  for (const AlgorithmCost& algorithm : algorithms)
    if (quickest == nullptr || algorithm.timeUs(bytes) < quickest->timeUs(bytes))
      quickest = &algorithm;
  return quickest;
}

AllReduceCosts priceAllReduce(const Topology& topo, const RingSearchOptions& options) {
  AllReduceCosts costs;
  PathType inHost = PathType::kLoc;  // the farthest hop of any host's rings
  int perHost = 0;                   // GPUs on the largest host
  for (int host = 0; host < static_cast<int>(topo.hosts().size()); ++host) {
    int gpus = static_cast<int>(topo.nodesOf(NodeKind::kGpu, host).size());
    if (gpus == 0) continue;
    ++costs.hosts;
    costs.ranks += gpus;
    perHost = std::max(perHost, gpus);
    for (const Channel& channel : searchRings(topo, host, options).channels)
      inHost = std::max(inHost, channel.type);
  }
  if (costs.ranks < 2) return costs;
  const int n = costs.ranks, hosts = costs.hosts;

  RingPlan rings = searchNetRings(topo, options);
  if (rings.totalBw > 0) {
    int steps = 2 * (n - 1), netSteps = 2 * (hosts - 1);
    AlgorithmCost ring{"ring", static_cast<int>(rings.channels.size())};
    ring.latencyUs = kBaseUs + (steps - netSteps) * stepUs(inHost) + netSteps * kNetStepUs;
    ring.busBw = rings.totalBw;
    ring.algBw = rings.totalBw / busBwFactor(n);
    costs.algorithms.push_back(ring);
  }
  TreePlan trees = hosts > 1 ? searchTrees(topo, options) : TreePlan{};
  // Trees on one NIC share it (a host with one NIC gives both trees NIC 0): each NIC adds the
  // narrowest of the trees that use it.
  std::map<int, double> byRail;
  for (const Tree& tree : trees.trees)
    byRail[tree.rail] = byRail.count(tree.rail) ? std::min(byRail[tree.rail], tree.bw) : tree.bw;
  double treeBw = 0;
  for (const auto& [rail, bw] : byRail) treeBw += bw;
  if (treeBw > 0) {
    AlgorithmCost tree{"tree", static_cast<int>(trees.trees.size())};
    tree.latencyUs =
        kBaseUs + 2 * ((perHost - 1) * stepUs(inHost) + std::ceil(std::log2(hosts)) * kNetStepUs);
    tree.algBw = treeBw / 2;
    tree.busBw = tree.algBw * busBwFactor(n);
    costs.algorithms.push_back(tree);
  }
  return costs;
}

}  // namespace tutti::topology
