// Rings across hosts, rail-aligned: channel c enters every host through NIC in_c and leaves it
// through NIC out_c, the same NIC indices on every host.
//
// As NCCL's search does (src/graph/search.cc: NET -> GPU ... GPU -> NET), a channel enters a host
// at a GPU close to its NIC and leaves from a GPU close to the NIC it leaves through. Inside the
// host it follows one of the host's rings (searchRings) from the entry GPU; where the exit GPU
// is not the entry's ring predecessor it is taken out of ring order and put last. A channel
// leaves through the NIC it entered by (NCCL_CROSS_NIC's rail-aligned choice) unless crossing
// brings its ends closer, as where each NIC has one GPU near it (H100 hosts): the GPU after the
// entry's NIC can leave only through another NIC. Then channels 2k and 2k+1 cross, entering by
// NIC 2k and leaving by NIC 2k+1 and the other way round, so each NIC still sends and receives
// once (NCCL's crossNic = 2 pairs channels so). Bandwidth is then shared: every directed link used
// by k channel hops gives each of them its bandwidth / k, and a channel runs at its narrowest
// share.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <tuple>

#include "topology/chains.hpp"
#include "topology/topology.hpp"

namespace tutti::topology {
namespace {

// How one host's chain meets a channel's NICs, best first: the farther of the entry and exit
// paths (a channel enters and leaves as close to its NICs as the host allows), the farthest hop
// inside, the narrowest of all of them, whether a GPU left ring order, then how often earlier
// channels took the ring.
struct ChainScore {
  PathType ends = PathType::kNet;
  PathType hops = PathType::kNet;
  double bw = 0;
  bool reordered = true;
  int uses = 0;
  auto key() const { return std::make_tuple(ends, hops, -bw, reordered, uses); }
};

ChainScore score(const Topology& topo, const std::vector<int>& chain, int in, int out) {
  const Path &enter = topo.path(in, chain.front()), &leave = topo.path(chain.back(), out);
  ChainScore s;
  s.ends = std::max(enter.type, leave.type);
  s.hops = PathType::kLoc;
  s.bw = std::min(enter.bw, leave.bw);
  for (size_t i = 0; i + 1 < chain.size(); ++i) {
    const Path& hop = topo.path(chain[i], chain[i + 1]);
    s.hops = std::max(s.hops, hop.type);
    s.bw = std::min(s.bw, hop.bw);
  }
  return s;
}

struct HostChain {
  std::vector<int> chain;
  size_t ring = 0;
  ChainScore score;
};

// The best chain through one host from NIC endpoint `in` to `out`: every ring of the host, cut
// open at every GPU, with its tail as it falls or with any other GPU moved last.
HostChain bestChain(const Topology& topo, const RingPlan& rings, int in, int out,
                    const std::vector<int>& uses) {
  HostChain best;
  auto consider = [&](std::vector<int> chain, size_t r, bool reordered) {
    ChainScore s = score(topo, chain, in, out);
    s.reordered = reordered;
    s.uses = uses[r];
    if (!best.chain.empty() && s.key() >= best.score.key()) return;
    best = HostChain{std::move(chain), r, s};
  };
  for (size_t r = 0; r < rings.channels.size(); ++r) {
    const std::vector<int>& ring = rings.channels[r].ring;
    for (size_t start = 0; start < ring.size(); ++start) {
      std::vector<int> cut(ring.begin() + static_cast<long>(start), ring.end());
      cut.insert(cut.end(), ring.begin(), ring.begin() + static_cast<long>(start));
      consider(cut, r, false);
      for (size_t moved = 1; moved + 1 < cut.size(); ++moved) {
        std::vector<int> chain = cut;
        std::rotate(chain.begin() + static_cast<long>(moved),
                    chain.begin() + static_cast<long>(moved) + 1, chain.end());
        consider(std::move(chain), r, true);
      }
    }
  }
  return best;
}

struct HostRings {
  int host = 0;
  std::vector<int> nics;  // NIC node ids by index
  RingPlan rings;
  std::vector<int> uses;  // per ring: channels that took it
};

// Network endpoints of NIC indices `in` and `out` on one host.
std::pair<int, int> endpoints(const Topology& topo, const HostRings& h, int in, int out) {
  return {netEndpoint(topo, h.nics[static_cast<size_t>(in)]),
          netEndpoint(topo, h.nics[static_cast<size_t>(out)])};
}

// The farthest entry or exit, over every host, of channels entering and leaving by these NICs.
PathType farthestEnds(const Topology& topo, const std::vector<HostRings>& hosts,
                      std::initializer_list<std::pair<int, int>> inOut) {
  PathType worst = PathType::kLoc;
  for (const HostRings& h : hosts)
    for (auto [in, out] : inOut) {
      auto [inNode, outNode] = endpoints(topo, h, in, out);
      worst = std::max(worst, bestChain(topo, h.rings, inNode, outNode, h.uses).score.ends);
    }
  return worst;
}

// NIC index each channel leaves through: its own, or, for channels 2k and 2k+1, each other's
// where crossing brings the farthest entry or exit of the two closer on every host.
std::vector<int> exitRails(const Topology& topo, const std::vector<HostRings>& hosts,
                           int channels) {
  std::vector<int> out(static_cast<size_t>(channels));
  for (int c = 0; c < channels; ++c) out[static_cast<size_t>(c)] = c;
  for (int a = 0, b = 1; b < channels; a += 2, b += 2)
    if (farthestEnds(topo, hosts, {{a, b}, {b, a}}) < farthestEnds(topo, hosts, {{a, a}, {b, b}})) {
      out[static_cast<size_t>(a)] = b;
      out[static_cast<size_t>(b)] = a;
    }
  return out;
}

}  // namespace

RingPlan searchNetRings(const Topology& topo, const RingSearchOptions& options) {
  if (topo.hosts().size() <= 1) return searchRings(topo, 0, options);
  Rails rails = findRails(topo);
  if (rails.hosts.empty() || rails.count == 0) return {};
  std::vector<HostRings> hosts;
  for (size_t h = 0; h < rails.hosts.size(); ++h) {
    RingPlan rings = searchRings(topo, rails.hosts[h], options);
    if (rings.channels.empty()) return {};
    std::vector<int> uses(rings.channels.size(), 0);
    hosts.push_back(HostRings{rails.hosts[h], rails.nics[h], std::move(rings), std::move(uses)});
  }
  int channels = std::min(rails.count, options.maxChannels);
  if (channels < 1) return {};
  std::vector<int> exits = exitRails(topo, hosts, channels);
  std::vector<std::vector<int>> linksOf(static_cast<size_t>(channels));
  std::vector<int> load(topo.links().size(), 0);
  RingPlan plan;
  for (int c = 0; c < channels; ++c) {
    Channel channel{{}, PathType::kNet, 0, c, exits[static_cast<size_t>(c)]};
    for (HostRings& h : hosts) {
      auto [in, out] = endpoints(topo, h, channel.rail, channel.exitRail);
      HostChain best = bestChain(topo, h.rings, in, out, h.uses);
      ++h.uses[best.ring];
      std::vector<int> links = chainLinks(topo, best.chain, in, out);
      channel.ring.insert(channel.ring.end(), best.chain.begin(), best.chain.end());
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
