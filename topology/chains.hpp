// Shared by the searches across hosts: where a host meets the network, and how an in-host ring
// is cut open into a chain that enters and leaves the host there. Internal to topology/.
#pragma once

#include <vector>

#include "topology/topology.hpp"

namespace tutti::topology {

// The node a NIC meets the network at: its first network port, or the NIC itself where the file
// lists no port (the PCIe side then bounds what it carries).
int netEndpoint(const Topology& topo, int nic);

// `ring` cut open into a chain: the chain's head is entered from `endpoint`, and (withExit) its
// tail sends back to `endpoint`. Chosen by the closest path type, then the widest bandwidth, of
// those one or two paths.
struct Cut {
  std::vector<int> chain;
  PathType type = PathType::kLoc;
  double bw = 0;
};
Cut cutRing(const Topology& topo, const std::vector<int>& ring, int endpoint, bool withExit);

// The directed links a chain uses: from `endpoint` to its head, along it, and (withExit) from its
// tail back to `endpoint`.
std::vector<int> chainLinks(const Topology& topo, const std::vector<int>& chain, int endpoint,
                            bool withExit);

// Per host with GPUs, its NICs (the rails); empty when some host with GPUs has none.
struct Rails {
  std::vector<int> hosts;              // hosts with GPUs
  std::vector<std::vector<int>> nics;  // per entry of `hosts`: NIC node ids in index order
  int count = 0;                       // NICs on every such host (the fewest)
};
Rails findRails(const Topology& topo);

}  // namespace tutti::topology
