// Rings across hosts with rail alignment: channel c crosses every host through NIC c.
//
// Inside each host a channel follows one of the host's rings (searchRings), cut open where it
// best meets NIC c: it enters at a GPU close to the NIC and leaves from the GPU before it on the
// ring, also close to the NIC. Rings already taken by earlier channels are avoided when another
// meets the NIC as well. Bandwidth is then shared: every directed link used by k channel hops
// gives each of them its bandwidth / k, and a channel runs at its narrowest share.
#include <algorithm>
#include <cmath>
#include <tuple>

#include "topology/chains.hpp"
#include "topology/topology.hpp"

namespace tutti::topology {
namespace {

// A host's chain for one channel: the best cut through `endpoint` of any of the host's rings;
// among equal cuts, the ring least used so far (counted in `uses`).
std::vector<int> pickChain(const Topology& topo, const RingPlan& rings, int endpoint,
                           std::vector<int>& uses) {
  Cut best;
  size_t bestRing = 0;
  for (size_t r = 0; r < rings.channels.size(); ++r) {
    Cut cut = cutRing(topo, rings.channels[r].ring, endpoint, true);
    if (r > 0 && std::make_tuple(cut.type, -cut.bw, uses[r]) >=
                     std::make_tuple(best.type, -best.bw, uses[bestRing]))
      continue;
    best = std::move(cut);
    bestRing = r;
  }
  ++uses[bestRing];
  return best.chain;
}

}  // namespace

RingPlan searchNetRings(const Topology& topo, const RingSearchOptions& options) {
  if (topo.hosts().size() <= 1) return searchRings(topo, 0, options);
  Rails rails = findRails(topo);
  if (rails.hosts.empty() || rails.count == 0) return {};
  std::vector<RingPlan> inHost;
  std::vector<std::vector<int>> uses;
  for (int host : rails.hosts) {
    inHost.push_back(searchRings(topo, host, options));
    if (inHost.back().channels.empty()) return {};
    uses.emplace_back(inHost.back().channels.size(), 0);
  }
  int channels = std::min(rails.count, options.maxChannels);
  std::vector<std::vector<int>> linksOf(static_cast<size_t>(channels));
  std::vector<int> load(topo.links().size(), 0);
  RingPlan plan;
  for (int c = 0; c < channels; ++c) {
    Channel channel{{}, PathType::kNet, 0, c};
    for (size_t h = 0; h < rails.hosts.size(); ++h) {
      int endpoint = netEndpoint(topo, rails.nics[h][static_cast<size_t>(c)]);
      std::vector<int> chain = pickChain(topo, inHost[h], endpoint, uses[h]);
      std::vector<int> links = chainLinks(topo, chain, endpoint, true);
      channel.ring.insert(channel.ring.end(), chain.begin(), chain.end());
      linksOf[c].insert(linksOf[c].end(), links.begin(), links.end());
    }
    for (int id : linksOf[c]) ++load[id];
    plan.channels.push_back(std::move(channel));
  }
  for (int c = 0; c < channels; ++c) {
    double bw = INFINITY;
    for (int id : linksOf[c]) bw = std::min(bw, topo.links()[id].bw / load[id]);
    plan.channels[c].bw = std::isinf(bw) ? 0 : bw;
    plan.totalBw += plan.channels[c].bw;
  }
  return plan;
}

}  // namespace tutti::topology
