// Round trip: exporting a topology and importing the text again gives the same graph (nodes,
// links, bandwidths) and the same paths.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.hpp"
#include "helpers.hpp"

namespace tutti::topology::test {
namespace {

TEST_CASE("export then import gives the same graph, for every fixture") {
  for (const char* file : {"azure-ndv2.xml", "aws-p4d.xml", "azure-ndv5.xml", "oci-bm-gpu-h100.xml",
                           "dgx1-v100.xml", "pcie-2switch.xml", "fused-2host.xml"}) {
    INFO(file);
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

TEST_CASE(
    "a device of another class is a switch only over kept devices (found by fuzz/topology_xml)") {
  // 0000:01:00.0 (class 0x130200, neither a bridge nor a GPU or NIC) holds only a device the
  // graph leaves out (an NVMe drive); the export writes only what was kept, so a switch made of it
  // came back as a bare device of class 0x130200 and was dropped. 0000:03:00.0 holds a GPU: a
  // switch, written with its own class and the GPU under it.
  const std::string text =
      "<system version=\"1\"><cpu numaid=\"0\">"
      "<pci busid=\"0000:01:00.0\" class=\"0x130200\" link_speed=\"16 GT/s\" link_width=\"16\">"
      "<pci busid=\"0000:02:00.0\" class=\"0x010802\" link_speed=\"16 GT/s\" link_width=\"4\"/>"
      "</pci>"
      "<pci busid=\"0000:03:00.0\" class=\"0x130200\" link_speed=\"16 GT/s\" link_width=\"16\">"
      "<pci busid=\"0000:04:00.0\" class=\"0x030200\" link_speed=\"16 GT/s\" link_width=\"16\"/>"
      "</pci></cpu></system>";
  Topology original = parseXml(text, "other-class.xml");
  CHECK(original.findBusId(0, "0000:01:00.0") < 0);
  CHECK(original.findBusId(0, "0000:02:00.0") < 0);
  REQUIRE(original.nodesOf(NodeKind::kPciSwitch).size() == 1);
  const Node& kept = original.node(original.nodesOf(NodeKind::kPciSwitch).front());
  CHECK(kept.busId == "0000:03:00.0");
  CHECK(kept.pciClass == 0x130200);
  CHECK(original.node(gpu(original, 0)).parent == original.findBusId(0, "0000:03:00.0"));
  std::string written = toXml(original);
  Topology again = parseXml(written, "exported other-class.xml");
  checkSameGraph(original, again);
  CHECK(toXml(again) == written);
}

TEST_CASE(
    "a device without a class takes its kind's, as the export writes it (found by "
    "fuzz/topology_xml)") {
  const std::string text =
      "<system version=\"1\"><cpu numaid=\"0\">"
      "<pci busid=\"0000:01:00.0\" link_speed=\"16 GT/s\" link_width=\"16\">"
      "<pci busid=\"0000:02:00.0\" class=\"0x0\"><gpu dev=\"0\" sm=\"90\"/></pci>"
      "<pci busid=\"0000:03:00.0\"><nic><net name=\"mlx5_0\" speed=\"400000\"/></nic></pci>"
      "</pci></cpu></system>";
  Topology original = parseXml(text, "no-class.xml");
  CHECK(original.node(original.findBusId(0, "0000:01:00.0")).pciClass == 0x060400);
  CHECK(original.node(gpu(original, 0)).pciClass == 0x030200);
  CHECK(original.node(nic(original, 0)).pciClass == 0x020000);
  std::string written = toXml(original);
  Topology again = parseXml(written, "exported no-class.xml");
  checkSameGraph(original, again);
  CHECK(toXml(again) == written);
}

TEST_CASE("C2C links at different rates are written back exactly (found by fuzz/topology_xml)") {
  // One link at 1000 MB/s and 10 at 40000: 401 GB/s over 11 links, 36454.5 MB/s each, which one
  // <c2c> cannot hold; two do (5 at 36454, 6 at 36455).
  const std::string text =
      "<system version=\"1\"><cpu numaid=\"0\">"
      "<pci busid=\"0000:01:00.0\" class=\"0x030200\" link_speed=\"32 GT/s\" link_width=\"16\">"
      "<gpu dev=\"0\" sm=\"90\"><c2c count=\"1\" bw=\"1000\"/><c2c count=\"10\" bw=\"40000\"/>"
      "</gpu></pci></cpu></system>";
  Topology original = parseXml(text, "c2c.xml");
  const Link& c2c = original.links()[original.linksFrom(gpu(original, 0)).at(1)];
  REQUIRE(c2c.kind == LinkKind::kC2C);
  CHECK(c2c.count == 11);
  CHECK(c2c.bw == Approx(401));
  std::string written = toXml(original);
  CHECK_THAT(written, Catch::Contains("<c2c count=\"5\" bw=\"36454\" />") &&
                          Catch::Contains("<c2c count=\"6\" bw=\"36455\" />"));
  Topology again = parseXml(written, "exported c2c.xml");
  checkSameGraph(original, again);
  CHECK(again.links()[again.linksFrom(gpu(again, 0)).at(1)].bw == Approx(401).epsilon(1e-12));
  CHECK(toXml(again) == written);
}

TEST_CASE(
    "a port's speed is written in whole Mb/s, as NCCL writes it (found by fuzz/topology_xml)") {
  // 2000072 Mb/s was written "2.00007e+06": 250.009 GB/s came back as 250.00875, and NCCL, which
  // reads an integer, would have read 2 Mb/s. A fraction of a Mb/s is rounded off at import.
  const std::string text =
      "<system version=\"1\"><cpu numaid=\"0\">"
      "<pci busid=\"0000:01:00.0\" class=\"0x020700\" link_speed=\"16 GT/s\" link_width=\"16\">"
      "<nic><net name=\"mlx5_0\" dev=\"0\" speed=\"2000072\"/><net name=\"mlx5_1\" dev=\"1\" "
      "speed=\"25000.4\"/></nic></pci></cpu></system>";
  Topology original = parseXml(text, "speed.xml");
  std::string written = toXml(original);
  CHECK_THAT(written, Catch::Contains("speed=\"2000072\"") && Catch::Contains("speed=\"25000\""));
  Topology again = parseXml(written, "exported speed.xml");
  checkSameGraph(original, again);
  for (const Link& link : again.links())
    if (link.kind == LinkKind::kNet && link.from == nic(again, 0))
      CHECK((link.bw == Approx(250.009).epsilon(1e-12) || link.bw == Approx(3.125).epsilon(1e-12)));
  CHECK(toXml(again) == written);
}

TEST_CASE("a pcilink that would join another link is ignored, so the export keeps the graph") {
  // Found by hand after the fuzz run, with its oracle: a pcilink to the device's parent or child
  // joined the tree's link (twice the bandwidth) and one named twice doubled itself, which the
  // export (the tree as nesting, one pcilink per link) lost; one to the CPU joined the tree's link
  // too, and one to the NIC's own port was taken for the tree's link to it and dropped.
  Warnings warnings;
  warnings.expect();
  Topology original =
      loadXmlFile(std::string(TUTTI_FUZZ_XML_CORPUS) + "/pcilinks_joining_other_links.xml");
  CHECK(warnings.all().size() == 5);
  int pcilinks = 0;
  for (const Link& link : original.links()) {
    if (link.kind != LinkKind::kPcie) continue;
    CHECK(link.count == 1);
    CHECK(link.bw == Approx(24));
    const Node &from = original.node(link.from), &to = original.node(link.to);
    if (from.parent != link.to && to.parent != link.from) {
      ++pcilinks;
      CHECK(from.busId == "0000:02:00.0");
      CHECK(to.busId == "0000:03:00.0");
    }
  }
  CHECK(pcilinks == 1);
  std::string written = toXml(original);
  Topology again = parseXml(written, "exported pcilinks.xml");
  checkSameGraph(original, again);
  CHECK(toXml(again) == written);
}

// Every input of the fuzz target's corpus (the seeds and the inputs that found bugs) that loads
// survives the round trip: the oracle of fuzz/topology_xml, held to the whole graph here.
TEST_CASE("every input of fuzz/corpus/topology_xml that loads survives the round trip") {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(TUTTI_FUZZ_XML_CORPUS))
    files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 8);
  int loaded = 0;
  for (const auto& file : files) {
    INFO(file.filename().string());
    Warnings warnings;
    warnings.expect();  // unknown elements in the inputs that found bugs
    Topology original;
    try {
      original = loadXmlFile(file.string());
    } catch (const Error& error) {
      CHECK(error.code() == ErrorCode::kInvalidArgument);
      continue;
    }
    ++loaded;
    std::string written = toXml(original);
    Topology again = parseXml(written, "exported " + file.filename().string());
    checkSameGraph(original, again);
    CHECK(toXml(again) == written);
  }
  CHECK(loaded > 0);
}

}  // namespace
}  // namespace tutti::topology::test
