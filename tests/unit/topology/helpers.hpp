// Shared by the topology tests: fixture loading, node lookup, and the graph comparison of the
// round-trip tests.
#pragma once

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/warnings.hpp"
#include "topology/topology.hpp"

namespace tutti::topology::test {

inline std::string fixture(const std::string& name) {
  return std::string(TUTTI_TOPO_FIXTURES) + "/" + name;
}

using tutti::tests::Warnings;

inline Topology load(const std::string& name) {
  return loadXmlFile(fixture(name));
}

// Every topology file of tests/fixtures/topologies (not its refused/ folder), sorted.
std::vector<std::string> fixtureFiles();
// loadTopologyFile(file) for a fixture of fixtureFiles(), checking its warnings are exactly the
// ones the file is known to give (real dumps have oddities tutti ignores, as NCCL does, saying so).
// Calls Warnings().expect() for the test case.
Topology loadFixture(const std::string& file);

// Host 0's node with this bus id (or port name).
inline const Node& nodeNamed(const Topology& topo, const std::string& busId) {
  int id = topo.findBusId(0, busId);
  REQUIRE(id >= 0);
  return topo.node(id);
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

// The same graph: nodes (kind, bus id, host, parent, index, NUMA id, PCI class, SM, PCIe rate
// and width, GUID), links (ends, kind, count, bandwidth) and every path (type, bandwidth).
inline void checkSameGraph(const Topology& a, const Topology& b) {
  CHECK(a.hosts() == b.hosts());
  REQUIRE(a.nodes().size() == b.nodes().size());
  for (size_t i = 0; i < a.nodes().size(); ++i) {
    const Node &x = a.nodes()[i], &y = b.nodes()[i];
    INFO(x.busId);
    CHECK(x.kind == y.kind);
    CHECK(x.busId == y.busId);
    CHECK(x.host == y.host);
    CHECK(x.parent == y.parent);
    CHECK(x.index == y.index);
    CHECK(x.numaId == y.numaId);
    CHECK(x.pciClass == y.pciClass);
    CHECK(x.sm == y.sm);
    CHECK(x.pciGts == y.pciGts);
    CHECK(x.pciWidth == y.pciWidth);
    CHECK(x.guid == y.guid);
  }
  REQUIRE(a.links().size() == b.links().size());
  for (size_t i = 0; i < a.links().size(); ++i) {
    const Link &x = a.links()[i], &y = b.links()[i];
    CHECK(x.from == y.from);
    CHECK(x.to == y.to);
    CHECK(x.kind == y.kind);
    CHECK(x.count == y.count);
    CHECK(x.bw == Approx(y.bw));
  }
  for (size_t from = 0; from < a.nodes().size(); ++from)
    for (size_t to = 0; to < a.nodes().size(); ++to) {
      const Path &x = a.path(static_cast<int>(from), static_cast<int>(to)),
                 &y = b.path(static_cast<int>(from), static_cast<int>(to));
      CHECK(x.type == y.type);
      CHECK(x.bw == Approx(y.bw));
    }
}

}  // namespace tutti::topology::test
