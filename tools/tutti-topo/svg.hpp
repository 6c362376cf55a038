// The topology drawn as SVG: each host's GPUs on a circle, its NICs below, NVLinks in grey, and
// the ring channels (across hosts when there are several) in colour, one colour per channel.
#pragma once

#include <string>

#include "topology/topology.hpp"

namespace tutti::tools {

std::string toSvg(const topology::Topology& topo);

}  // namespace tutti::tools
