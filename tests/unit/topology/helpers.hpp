// Shared by the topology tests: fixture loading, node lookup and a guard that fails a test on
// any warning it did not expect.
#pragma once

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "base/log.hpp"
#include "topology/topology.hpp"

namespace tutti::topology::test {

inline std::string fixture(const std::string& name) {
  return std::string(TUTTI_TOPO_FIXTURES) + "/" + name;
}

// Collects warnings while alive; the destructor checks that none came unless allowed.
class WarningGuard {
 public:
  WarningGuard() {
    log::setSink([this](log::Level level, const std::string& message) {
      if (level == log::Level::kWarn) warnings.push_back(message);
    });
  }
  ~WarningGuard() {
    log::setSink(nullptr);
    if (!allowWarnings) CHECK(warnings.empty());
  }
  std::vector<std::string> warnings;
  bool allowWarnings = false;
};

inline Topology load(const std::string& name) {
  return loadXmlFile(fixture(name));
}

inline int nodeAt(const Topology& topo, NodeKind kind, int index, int host = 0) {
  return topo.nodesOf(kind, host).at(static_cast<size_t>(index));
}
inline int gpu(const Topology& topo, int index, int host = 0) {
  return nodeAt(topo, NodeKind::kGpu, index, host);
}
inline int nic(const Topology& topo, int index, int host = 0) {
  return nodeAt(topo, NodeKind::kNic, index, host);
}

// NVLink lanes leaving GPUs, as the file lists them.
inline int nvlinkLanes(const Topology& topo) {
  int lanes = 0;
  for (const Link& link : topo.links())
    if (link.kind == LinkKind::kNvLink && topo.node(link.from).kind == NodeKind::kGpu)
      lanes += link.count;
  return lanes;
}

}  // namespace tutti::topology::test
