// What tutti-topo prints: the tree of each host, the path matrix, the ring channels.
#pragma once

#include <string>

#include "topology/topology.hpp"

namespace tutti::tools {

std::string formatTree(const topology::Topology& topo);
// GPU x GPU and GPU x NIC path types and bandwidths, like `nvidia-smi topo -m`.
std::string formatMatrix(const topology::Topology& topo);
std::string formatRings(const topology::Topology& topo);

}  // namespace tutti::tools
