// Round trip: exporting a topology and importing the text again gives the same graph (nodes,
// links, bandwidths) and the same paths.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "helpers.hpp"

namespace tutti::topology::test {
namespace {

void checkSameGraph(const Topology& a, const Topology& b) {
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

TEST_CASE("export then import gives the same graph, for every fixture") {
  for (const char* file : {"azure-ndv2.xml", "aws-p4d.xml", "azure-ndv5.xml", "oci-bm-gpu-h100.xml",
                           "dgx1-v100.xml", "pcie-2switch.xml", "fused-2host.xml"}) {
    INFO(file);
    WarningGuard guard;
    Topology original = load(file);
    std::string text = toXml(original);
    Topology again = parseXml(text, std::string("exported ") + file);
    checkSameGraph(original, again);
    CHECK(toXml(again) == text);
  }
}

TEST_CASE("saveXmlFile writes what toXml returns") {
  Topology topo = load("dgx1-v100.xml");
  std::string path = "test_topology_export.xml";
  saveXmlFile(topo, path);
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  CHECK(text.str() == toXml(topo));
  std::remove(path.c_str());
}

TEST_CASE("a pcilink survives the round trip (found by fuzz/topology_xml)") {
  WarningGuard guard;
  const std::string text =
      "<system version=\"1\"><cpu numaid=\"0\">"
      "<pci busid=\"0000:01:00.0\" class=\"0x030200\" link_speed=\"16 GT/s\" link_width=\"16\">"
      "<gpu dev=\"0\" sm=\"90\"/><pcilink target=\"0000:02:00.0\"/></pci>"
      "<pci busid=\"0000:02:00.0\" class=\"0x020700\" link_speed=\"16 GT/s\" link_width=\"16\">"
      "<nic><net name=\"mlx5_0\" dev=\"0\" speed=\"400000\"/></nic></pci>"
      "</cpu></system>";
  Topology original = parseXml(text, "pcilink.xml");
  checkSameGraph(original, parseXml(toXml(original), "exported pcilink.xml"));
}

}  // namespace
}  // namespace tutti::topology::test
