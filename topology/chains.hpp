// Shared by the searches across hosts: where a host meets the network, and how an in-host ring
// is cut open into a chain that enters and leaves the host there. Internal to topology/.
#pragma once

#include <vector>

#include "topology/topology.hpp"

namespace tutti::topology {

// The node a NIC meets the network at: its first network port, or the NIC itself where the file
// lists no port (the PCIe side then bounds what it carries).
int netEndpoint(const Topology& topo, int nic);

// `ring` cut open into a chain whose head is entered from `endpoint`: the cut with the closest
// path type, then the widest bandwidth, from there.
struct Cut {
  std::vector<int> chain;
  PathType type = PathType::kLoc;
  double bw = 0;
};
Cut cutRing(const Topology& topo, const std::vector<int>& ring, int endpoint);

// The directed links a chain uses: from `entry` to its head, along it, and (exit >= 0) from its
// tail to `exit`.
std::vector<int> chainLinks(const Topology& topo, const std::vector<int>& chain, int entry,
                            int exit);

// Per host with GPUs, its NICs (the rails); empty when some host with GPUs has none.
struct Rails {
  std::vector<int> hosts;              // hosts with GPUs
  std::vector<std::vector<int>> nics;  // per entry of `hosts`: NIC node ids in index order
  int count = 0;                       // NICs on every such host (the fewest)
};
Rails findRails(const Topology& topo);

}  // namespace tutti::topology
