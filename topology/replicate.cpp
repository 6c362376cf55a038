// N copies of one host, for planning N identical hosts from one host's topology.
#include "base/error.hpp"
#include "topology/topology.hpp"

namespace tutti::topology {

Topology replicateHosts(const Topology& one, int hosts) {
  if (hosts < 1 || hosts > 4096)
    raise(ErrorCode::kInvalidArgument, "topology: host count {} out of range 1..4096", hosts);
  std::vector<int> original;  // node ids of host 0, in order
  for (size_t id = 0; id < one.nodes().size(); ++id)
    if (one.node(static_cast<int>(id)).host == 0) original.push_back(static_cast<int>(id));
  // Copies are added host by host in the original order: copy h of node id is h * size + position.
  std::vector<int> position(one.nodes().size(), -1);
  for (size_t i = 0; i < original.size(); ++i) position[original[i]] = static_cast<int>(i);
  int size = static_cast<int>(original.size());
  Topology topo;
  for (int host = 0; host < hosts; ++host) {
    topo.addHost(std::to_string(host));
    for (int id : original) {
      Node node = one.node(id);
      node.host = host;
      if (node.parent >= 0) node.parent = host * size + position[node.parent];
      topo.addNode(std::move(node));
    }
    for (const Link& link : one.links())
      if (one.node(link.from).host == 0)
        topo.addDirectedLink(host * size + position[link.from], host * size + position[link.to],
                             link.kind, link.bw, link.count);
  }
  topo.notes = one.notes;
  topo.computePaths();
  return topo;
}

}  // namespace tutti::topology
