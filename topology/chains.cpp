// Where a host meets the network, and in-host rings cut open into chains through a NIC.
#include "topology/chains.hpp"

#include <algorithm>
#include <tuple>

namespace tutti::topology {

int netEndpoint(const Topology& topo, int nic) {
  for (int id : topo.linksFrom(nic)) {
    const Link& link = topo.links()[id];
    if (link.kind == LinkKind::kNet && topo.node(link.to).kind == NodeKind::kNet) return link.to;
  }
  return nic;
}

Cut cutRing(const Topology& topo, const std::vector<int>& ring, int endpoint) {
  Cut best;
  size_t n = ring.size();
  for (size_t start = 0; start < n; ++start) {
    const Path& in = topo.path(endpoint, ring[start]);
    if (!best.chain.empty() &&
        std::make_tuple(in.type, -in.bw) >= std::make_tuple(best.type, -best.bw))
      continue;
    best.type = in.type;
    best.bw = in.bw;
    best.chain.assign(ring.begin() + static_cast<long>(start), ring.end());
    best.chain.insert(best.chain.end(), ring.begin(), ring.begin() + static_cast<long>(start));
  }
  return best;
}

std::vector<int> chainLinks(const Topology& topo, const std::vector<int>& chain, int entry,
                            int exit) {
  std::vector<int> links = topo.path(entry, chain.front()).links;
  for (size_t i = 0; i + 1 < chain.size(); ++i) {
    const Path& hop = topo.path(chain[i], chain[i + 1]);
    links.insert(links.end(), hop.links.begin(), hop.links.end());
  }
  if (exit >= 0) {
    const Path& out = topo.path(chain.back(), exit);
    links.insert(links.end(), out.links.begin(), out.links.end());
  }
  return links;
}

Rails findRails(const Topology& topo) {
  Rails rails;
  for (int host = 0; host < static_cast<int>(topo.hosts().size()); ++host) {
    if (topo.nodesOf(NodeKind::kGpu, host).empty()) continue;
    rails.hosts.push_back(host);
    rails.nics.push_back(topo.nodesOf(NodeKind::kNic, host));
    int count = static_cast<int>(rails.nics.back().size());
    rails.count = rails.hosts.size() == 1 ? count : std::min(rails.count, count);
  }
  return rails;
}

}  // namespace tutti::topology
