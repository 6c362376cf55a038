// NVLinks as both the NCCL XML importer and the probe add them: NCCL models all of a host's
// NVSwitches as one node, and a GPU's lanes to it add up.
#pragma once

#include "topology/bandwidth.hpp"
#include "topology/topology.hpp"

namespace tutti::topology {

// The host's one NVSwitch node, added on first use.
inline int hostNvSwitch(Topology& topo, int host) {
  for (int id : topo.nodesOf(NodeKind::kNvSwitch, host)) return id;
  Node node;
  node.kind = NodeKind::kNvSwitch;
  node.host = host;
  node.busId = "nvswitch";
  return topo.addNode(node);
}

// `count` lanes from a GPU to the host's NVSwitch, both directions, at the GPU's per-lane rate.
inline void addNvLinksToSwitch(Topology& topo, int gpu, int count) {
  int nvSwitch = hostNvSwitch(topo, topo.node(gpu).host);  // may grow the node table
  topo.addLink(gpu, nvSwitch, LinkKind::kNvLink, count * nvlinkBw(topo.node(gpu).sm), count);
}

}  // namespace tutti::topology
