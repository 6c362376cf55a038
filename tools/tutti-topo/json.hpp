// The topology as JSON: hosts, nodes, links and each host's ring channels, for scripts.
#pragma once

#include <string>

#include "topology/topology.hpp"

namespace tutti::tools {

std::string toJson(const topology::Topology& topo);

}  // namespace tutti::tools
