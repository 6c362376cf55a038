// What tutti-topo prints: the tree of each host, the path matrix, the ring and tree channels,
// the cost model's all-reduce figures.
#pragma once

#include <string>

#include "topology/topology.hpp"

namespace tutti::tools {

std::string formatTree(const topology::Topology& topo);
// GPU x GPU and GPU x NIC path types and bandwidths, like `nvidia-smi topo -m`.
std::string formatMatrix(const topology::Topology& topo);
// Each host's rings, then (several hosts) the rings across hosts.
std::string formatRings(const topology::Topology& topo);
// The double binary tree across hosts.
std::string formatTrees(const topology::Topology& topo);
// The all-reduce cost model's busbw by size for each algorithm, and the quickest.
std::string formatPrediction(const topology::Topology& topo);

}  // namespace tutti::tools
