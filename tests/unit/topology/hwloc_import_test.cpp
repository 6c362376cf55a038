// hwloc XML import through hwloc itself, and the device facts (libibverbs, NVML) attached by PCI
// bus id; a dual-port card of two PCI functions becomes one NIC. Figures by hand from
// hwloc-2socket-gpu.xml: hwloc's link speed is lanes x rate x encoding / 8, so 31.507692 GB/s is
// Gen4 x16 (our 1.5 GB/s per lane: 24 GB/s), 15.753846 is Gen3 x16 (12 GB/s), 7.876923 Gen3 x8
// (6 GB/s); Sapphire Rapids (model 143) UPI 22 GB/s.
// Counts against the files are checked by hwloc_xml_counts.py, which reads them with Python.
#include <cstdio>
#include <fstream>

#include "base/error.hpp"
#include "helpers.hpp"
#include "topology/hwloc_reader.hpp"

namespace tutti::topology::test {
namespace {

TEST_CASE("hwloc XML: two sockets, a PCIe switch, GPUs and NICs with their link speeds") {
  Topology topo = loadHwlocXmlFile(fixture("hwloc-2socket-gpu.xml"));
  REQUIRE(topo.nodesOf(NodeKind::kCpu).size() == 2);
  CHECK(topo.node(topo.nodesOf(NodeKind::kCpu)[1]).package == 1);
  CHECK(topo.node(topo.nodesOf(NodeKind::kCpu)[1]).model == 143);
  CHECK(topo.nodesOf(NodeKind::kGpu).size() == 2);
  CHECK(topo.nodesOf(NodeKind::kNic).size() == 2);
  CHECK(topo.nodesOf(NodeKind::kPciSwitch).size() == 1);
  CHECK(nodeNamed(topo, "0000:01:00.0").pciGts == 16);
  CHECK(nodeNamed(topo, "0000:01:00.0").pciWidth == 16);
  CHECK(nodeNamed(topo, "0000:80:00.0").pciGts == 8);
  CHECK(nodeNamed(topo, "0000:81:00.0").pciWidth == 8);
  CHECK(topo.findBusId(0, "0000:82:00.0") < 0);  // the NVMe drive is not part of the graph
  int gpu0 = gpu(topo, 0), gpu1 = gpu(topo, 1), nic0 = nic(topo, 0);
  CHECK(topo.path(gpu0, nic0).type == PathType::kPix);
  CHECK(topo.path(gpu0, nic0).bw == Approx(24));
  CHECK(topo.path(gpu0, gpu1).type == PathType::kSys);
  CHECK(topo.path(gpu0, gpu1).bw == Approx(12));
  // Without verbs facts the NIC's ports are hwloc's OS devices, at the NIC's PCIe bandwidth.
  CHECK(topo.nodesOf(NodeKind::kNet).size() == 3);
  CHECK(nodeNamed(topo, "mlx5_0").inferred.find("speed unknown") != std::string::npos);
}

TEST_CASE("hwloc XML: hardware threads give each rank its package, NUMA node and core") {
  Topology topo = loadHwlocXmlFile(fixture("hwloc-2socket-gpu.xml"));
  REQUIRE(topo.pus.size() == 8);
  RankPlace place = placeOf(topo, 5);
  CHECK(place.package == 1);
  CHECK(place.numa == 1);
  CHECK(place.core == 2);  // hwloc's logical core index: the third core of the machine
  CHECK(placeOf(topo, 1).core == placeOf(topo, 0).core);
  CHECK(placeOf(topo, 99).package == -1);
  CHECK(placeOf(load("dgx1-v100.xml"), 0).numa == -1);  // NCCL XML lists no threads
}

TEST_CASE("device facts attach to the NIC and GPU nodes by bus id") {
  DeviceFacts facts;
  facts.hcas.push_back(Hca{"mlx5_0",
                           "0000:02:00.0",
                           "0x58a2e10300000001",
                           {{1, true, 200000, "IB"}, {2, false, 0, "IB"}}});
  facts.gpus.push_back(
      GpuFacts{"0000:01:00.0", 0, 90, {{"0000:80:00.0", false, 4}, {"0000:ff:00.0", true, 2}}});
  facts.gpus.push_back(GpuFacts{"0000:80:00.0", 1, 90, {{"0000:01:00.0", false, 4}}});
  Topology topo = readHwloc(fixture("hwloc-2socket-gpu.xml"), facts);
  // The HCA's one active port replaces hwloc's mlx5_0 and ib0: 200 Gb/s = 25 GB/s.
  const Node& port = nodeNamed(topo, "mlx5_0:1");
  CHECK(port.linkLayer == "IB");
  CHECK(port.guid == "0x58a2e10300000001");
  CHECK(topo.findBusId(0, "ib0") < 0);
  CHECK(topo.findBusId(0, "mlx5_0:2") < 0);         // down: not used
  CHECK(topo.nodesOf(NodeKind::kNet).size() == 2);  // mlx5_0:1 and eth1
  CHECK(topo.path(nic(topo, 0), topo.findBusId(0, "mlx5_0:1")).bw == Approx(25));
  const Node& gpu0 = topo.node(gpu(topo, 0));
  CHECK(gpu0.sm == 90);
  CHECK(gpu0.dev == 0);
  CHECK(gpu0.inferred.empty());
  // 4 lanes each way at sm90's 20.6 GB/s; the NVSwitch takes 2 lanes from GPU 0.
  CHECK(topo.path(gpu(topo, 0), gpu(topo, 1)).type == PathType::kNvl);
  CHECK(topo.path(gpu(topo, 0), gpu(topo, 1)).bw == Approx(4 * 20.6));
  CHECK(topo.path(gpu(topo, 1), gpu(topo, 0)).bw == Approx(4 * 20.6));
  REQUIRE(topo.nodesOf(NodeKind::kNvSwitch).size() == 1);
  CHECK(topo.path(gpu(topo, 0), topo.nodesOf(NodeKind::kNvSwitch)[0]).bw == Approx(2 * 20.6));
}

// The card of hwloc-dual-port-nic.xml as libibverbs describes it: two HCAs, one per PCI function,
// with the card's system image GUID.
DeviceFacts dualPortFacts(const std::string& secondGuid = "0x9a70500003ae6d94") {
  DeviceFacts facts;
  facts.hcas.push_back(
      Hca{"mlx5_0", "0000:0c:00.0", "0x9a70500003ae6d94", {{1, true, 200000, "IB"}}});
  facts.hcas.push_back(Hca{"mlx5_1", "0000:0c:00.1", secondGuid, {{1, true, 200000, "IB"}}});
  return facts;
}

TEST_CASE("a dual-port card of two PCI functions is one NIC with two ports, as NCCL's XML has it") {
  Topology probed = readHwloc(fixture("hwloc-dual-port-nic.xml"), dualPortFacts());
  REQUIRE(probed.nodesOf(NodeKind::kNic).size() == 1);
  CHECK(probed.node(nic(probed, 0)).busId == "0000:0c:00.0");
  CHECK(probed.findBusId(0, "0000:0c:00.1") < 0);
  REQUIRE(probed.nodesOf(NodeKind::kNet).size() == 2);  // ib0 and ib1 are replaced
  const Node &port1 = nodeNamed(probed, "mlx5_0"), &port2 = nodeNamed(probed, "mlx5_1");
  CHECK(port1.parent == nic(probed, 0));
  CHECK(port2.parent == nic(probed, 0));
  CHECK(port1.port == 1);
  CHECK(port2.port == 2);
  CHECK(port2.guid == "0x9a70500003ae6d94");
  CHECK(probed.path(gpu(probed, 0), probed.findBusId(0, "mlx5_1")).type == PathType::kPix);
  CHECK(probed.path(gpu(probed, 0), probed.findBusId(0, "mlx5_1")).bw == Approx(24));
  CHECK(probed.path(nic(probed, 0), probed.findBusId(0, "mlx5_1")).bw == Approx(25));

  // The card as NCCL dumps it (oci-bm-gpu-h100.xml's, one level of switches): the same NIC.
  const std::string nccl =
      "<system version=\"1\"><cpu numaid=\"0\" arch=\"x86_64\" vendor=\"GenuineIntel\" "
      "familyid=\"6\" modelid=\"143\"><pci busid=\"0000:00:01.0\" class=\"0x060400\" "
      "link_speed=\"16 GT/s\" link_width=\"16\"><pci busid=\"0000:0b:00.0\" class=\"0x030200\" "
      "link_speed=\"16 GT/s\" link_width=\"16\"><gpu sm=\"90\"/></pci><pci busid=\"0000:0c:00.0\" "
      "class=\"0x020700\" link_speed=\"16 GT/s\" link_width=\"16\"><nic>"
      "<net name=\"mlx5_0\" speed=\"200000\" port=\"1\" guid=\"0x9a70500003ae6d94\" "
      "link_layer=\"IB\"/><net name=\"mlx5_1\" speed=\"200000\" port=\"2\" "
      "guid=\"0x9a70500003ae6d94\" link_layer=\"IB\"/></nic></pci></pci></cpu></system>";
  Topology imported = parseXml(nccl, "dual-port.xml");
  REQUIRE(imported.nodesOf(NodeKind::kNic).size() == 1);
  REQUIRE(imported.nodesOf(NodeKind::kNet).size() == 2);
  for (const char* name : {"mlx5_0", "mlx5_1"}) {
    INFO(name);
    const Node &a = nodeNamed(probed, name), &b = nodeNamed(imported, name);
    CHECK(a.port == b.port);
    CHECK(a.guid == b.guid);
    CHECK(a.linkLayer == b.linkLayer);
    int pa = probed.findBusId(0, name), pb = imported.findBusId(0, name);
    CHECK(probed.path(gpu(probed, 0), pa).type == imported.path(gpu(imported, 0), pb).type);
    CHECK(probed.path(gpu(probed, 0), pa).bw == Approx(imported.path(gpu(imported, 0), pb).bw));
  }
  // Its NCCL XML export is that <nic>, and reads back the same.
  const std::string written = toXml(probed);
  CHECK_THAT(written, Catch::Contains("<net name=\"mlx5_0\" speed=\"200000\" port=\"1\" "
                                      "guid=\"0x9a70500003ae6d94\" link_layer=\"IB\" />") &&
                          Catch::Contains("<net name=\"mlx5_1\" speed=\"200000\" port=\"2\" "
                                          "guid=\"0x9a70500003ae6d94\" link_layer=\"IB\" />"));
  checkSameGraph(probed, parseXml(toXml(probed), "probed.xml"));
}

TEST_CASE("PCI functions of one device with different GUIDs stay two NICs; hwloc alone sees two") {
  Topology two = readHwloc(fixture("hwloc-dual-port-nic.xml"), dualPortFacts("0x9a70500003ae6d95"));
  CHECK(two.nodesOf(NodeKind::kNic).size() == 2);
  CHECK(two.node(nodeNamed(two, "mlx5_1").parent).busId == "0000:0c:00.1");
  CHECK(nodeNamed(two, "mlx5_1").port == 1);
  // Without libibverbs nothing says the functions are one card: two NICs, hwloc's OS devices.
  Topology plain = loadHwlocXmlFile(fixture("hwloc-dual-port-nic.xml"));
  CHECK(plain.nodesOf(NodeKind::kNic).size() == 2);
  CHECK(plain.nodesOf(NodeKind::kNet).size() == 4);
}

TEST_CASE("this machine's hwloc XML (lstopo --of xml) loads like its probe") {
  Topology topo = loadHwlocXmlFile(fixture("hwloc-dev-vm.xml"));
  CHECK(topo.nodesOf(NodeKind::kCpu).size() == 1);
  CHECK(topo.nodesOf(NodeKind::kGpu).empty());
  REQUIRE(topo.nodesOf(NodeKind::kNic).size() == 1);  // virtio-net; the virtio disk is left out
  CHECK(topo.node(nic(topo, 0)).busId == "0000:00:03.0");
  // hwloc's link speed is 0 for virtio: the importer assumes Gen3 x16 and says so.
  CHECK(topo.node(nic(topo, 0)).inferred.find("Gen3 x16") != std::string::npos);
}

TEST_CASE("topology files are told apart by their root element") {
  CHECK(!loadTopologyFile(fixture("hwloc-2socket-gpu.xml")).pus.empty());
  CHECK(loadTopologyFile(fixture("dgx1-v100.xml")).nodesOf(NodeKind::kGpu).size() == 8);
}

TEST_CASE("bad hwloc XML is an error naming the file") {
  std::string path = "test_topology_bad_hwloc.xml";
  {
    std::ofstream file(path);
    file << "<?xml version=\"1.0\"?>\n<topology version=\"2.0\"><object type=\"Machine\"";
  }
  try {
    loadTopologyFile(path);
    FAIL("truncated hwloc XML loaded");
  } catch (const Error& error) {
    CHECK_THAT(error.what(), Catch::Contains(path));
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tutti::topology::test
