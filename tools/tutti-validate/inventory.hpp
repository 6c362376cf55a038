// What each host has, compared across hosts (issue 22, item 1): its topology (TUTTI_TOPO_FILE,
// else the probe) as facts — counts of NUMA nodes, cores, GPUs and NICs; each GPU's and NIC's PCIe
// link; each network port's speed; each RDMA port's state and rate from sysfs — and the RDMA error
// counters that are not zero. A host whose fact differs from the majority of hosts (or from an
// expected topology file) is named with what was expected; a non-zero error counter is named
// wherever it is.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tools/tutti-validate/verdict.hpp"
#include "topology/topology.hpp"

namespace tutti::validate {

struct Inventory {
  std::map<std::string, std::string> facts;  // "GPUs" -> "8", "GPU 0000:1b:00.0 PCIe" -> "x16 ..."
  std::vector<std::string> errors;           // "mlx5_0:1 symbol_error 12"
};

Inventory inventoryOf(const topology::Topology& topo,
                      const std::vector<topology::RdmaDevice>& rdma);
// This host's: TUTTI_TOPO_FILE (errors name it), else the probe; RDMA ports from sysfs.
Inventory localInventory();
// One line per fact and error, for the gather between ranks; decode throws on a malformed text.
std::string encodeInventory(const Inventory& inventory);
Inventory decodeInventory(const std::string& text);
// Findings (kind kInventory) for every host's differences from `expected` when given, else from
// the value most hosts have; and for every non-zero error counter.
std::vector<Finding> compareInventories(const std::vector<Inventory>& hosts,
                                        const Inventory* expected);

}  // namespace tutti::validate
