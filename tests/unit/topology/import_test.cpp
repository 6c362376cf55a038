// Every fixture loads; counts, path types and bandwidths computed by hand from each file
// (PCIe per lane: Gen3 0.75, Gen4 1.5, Gen5 3 GB/s; NVLink per lane: sm70 20, sm90 20.6 GB/s;
// CPU interconnect: Broadwell 6, Skylake 10, Sapphire Rapids 22, AMD 16 GB/s; port Mb/s / 8000).
#include "helpers.hpp"

namespace tutti::topology::test {
namespace {

void checkPath(const Topology& topo, int a, int b, PathType type, double bw) {
  INFO(topo.node(a).busId << " -> " << topo.node(b).busId);
  CHECK(pathTypeName(topo.path(a, b).type) == std::string(pathTypeName(type)));
  CHECK(topo.path(a, b).bw == Approx(bw));
}

size_t count(const Topology& topo, NodeKind kind) {
  return topo.nodesOf(kind).size();
}

TEST_CASE("azure-ndv2: flat GPUs under two sockets, one NIC, all inferred from classes") {
  Topology topo = load("azure-ndv2.xml");
  CHECK(count(topo, NodeKind::kGpu) == 8);
  CHECK(count(topo, NodeKind::kNic) == 1);
  CHECK(count(topo, NodeKind::kNet) == 0);
  CHECK(nvlinkLanes(topo) == 0);
  CHECK(topo.node(gpu(topo, 0)).inferred.find("0x030200") != std::string::npos);
  checkPath(topo, gpu(topo, 0), gpu(topo, 1), PathType::kPhb, 24);  // 16 GT/s x16
  checkPath(topo, gpu(topo, 0), gpu(topo, 4), PathType::kSys, 10);  // Skylake UPI
  checkPath(topo, gpu(topo, 3), nic(topo, 0), PathType::kPhb, 24);
  checkPath(topo, gpu(topo, 7), nic(topo, 0), PathType::kSys, 10);
  checkPath(topo, gpu(topo, 2), gpu(topo, 2), PathType::kLoc, 0);
}

TEST_CASE("aws-p4d: comments, 4 switches with 2 GPUs and 1 EFA NIC each") {
  Topology topo = load("aws-p4d.xml");
  CHECK(count(topo, NodeKind::kGpu) == 8);
  CHECK(count(topo, NodeKind::kNic) == 4);
  CHECK(count(topo, NodeKind::kPciSwitch) == 4);
  CHECK(nvlinkLanes(topo) == 0);
  checkPath(topo, gpu(topo, 0), gpu(topo, 1), PathType::kPix, 12);  // 8 GT/s x16
  checkPath(topo, gpu(topo, 0), nic(topo, 0), PathType::kPix, 12);
  checkPath(topo, gpu(topo, 0), gpu(topo, 2), PathType::kPhb, 12);
  checkPath(topo, gpu(topo, 0), gpu(topo, 4), PathType::kSys, 10);
  checkPath(topo, gpu(topo, 5), nic(topo, 3), PathType::kPhb, 12);
}

TEST_CASE("azure-ndv5: synthetic switches with zeroed ids, 32 GT/s") {
  Topology topo = load("azure-ndv5.xml");
  CHECK(count(topo, NodeKind::kGpu) == 8);
  CHECK(count(topo, NodeKind::kNic) == 8);
  CHECK(count(topo, NodeKind::kPciSwitch) == 8);
  checkPath(topo, gpu(topo, 0), nic(topo, 0), PathType::kPix, 48);
  checkPath(topo, gpu(topo, 0), gpu(topo, 1), PathType::kPhb, 48);
  checkPath(topo, gpu(topo, 0), gpu(topo, 4), PathType::kSys, 22);  // Sapphire Rapids UPI
}

TEST_CASE("oci-bm-gpu-h100: NVSwitches absent from the file, dual-port NICs") {
  Topology topo = load("oci-bm-gpu-h100.xml");
  CHECK(count(topo, NodeKind::kGpu) == 8);
  CHECK(count(topo, NodeKind::kNic) == 8);
  CHECK(count(topo, NodeKind::kNet) == 16);
  CHECK(count(topo, NodeKind::kNvSwitch) == 1);
  CHECK(nvlinkLanes(topo) == 8 * 18);
  const Node& port0 = topo.node(topo.nodesOf(NodeKind::kNet)[0]);
  const Node& port1 = topo.node(topo.nodesOf(NodeKind::kNet)[1]);
  CHECK(port0.guid == port1.guid);
  CHECK(port0.parent == port1.parent);
  checkPath(topo, gpu(topo, 0), gpu(topo, 1), PathType::kNvl, 18 * 20.6);
  checkPath(topo, gpu(topo, 0), gpu(topo, 7), PathType::kNvl, 18 * 20.6);
  // GPU 0 and NIC 0 meet at the upper switch 0000:08, below its 5 GT/s uplink.
  checkPath(topo, gpu(topo, 0), nic(topo, 0), PathType::kPxb, 48);
  checkPath(topo, gpu(topo, 0), topo.nodesOf(NodeKind::kNet)[0], PathType::kPxb, 22.5);
  // To the other socket: two 5 GT/s x16 uplinks (6 GB/s) and UPI.
  checkPath(topo, gpu(topo, 0), nic(topo, 4), PathType::kSys, 6);
  bool noted = false;
  for (const std::string& note : topo.notes)
    noted |= note.find("0000:1a:00.0") != std::string::npos;
  CHECK(noted);
}

TEST_CASE("fused-2host: two hosts, arm64 without vendor, defaults for empty link fields") {
  Topology topo = load("fused-2host.xml");
  REQUIRE(topo.hosts().size() == 2);
  CHECK(topo.nodesOf(NodeKind::kGpu, 0).size() == 1);
  CHECK(topo.nodesOf(NodeKind::kGpu, 1).size() == 1);
  const Node& arm = topo.node(topo.nodesOf(NodeKind::kCpu, 1)[0]);
  CHECK(arm.arch == "arm64");
  CHECK(arm.vendor.empty());
  CHECK(arm.numaId == -1);
  // Gen4 x16 on host 0; host 1's GPU link defaults to Gen3 x16 (12 GB/s).
  checkPath(topo, gpu(topo, 0, 0), nic(topo, 0, 0), PathType::kPhb, 24);
  checkPath(topo, gpu(topo, 0, 1), nic(topo, 0, 1), PathType::kPhb, 12);
  // Across hosts: NET, at the narrower side's best way into the network (100 Gb/s port).
  checkPath(topo, gpu(topo, 0, 0), gpu(topo, 0, 1), PathType::kNet, 12);
  CHECK(topo.notes.size() >= 2);
}

TEST_CASE("dgx1-v100: hybrid cube-mesh NVLink over PLX switches") {
  Topology topo = load("dgx1-v100.xml");
  CHECK(count(topo, NodeKind::kGpu) == 8);
  CHECK(count(topo, NodeKind::kNic) == 4);
  CHECK(nvlinkLanes(topo) == 48);
  checkPath(topo, gpu(topo, 0), gpu(topo, 1), PathType::kNvl, 20);
  checkPath(topo, gpu(topo, 0), gpu(topo, 3), PathType::kNvl, 40);
  checkPath(topo, gpu(topo, 0), gpu(topo, 5), PathType::kNvb, 20);  // through GPU 1 or 4
  checkPath(topo, gpu(topo, 0), nic(topo, 0), PathType::kPix, 12);
  checkPath(topo, gpu(topo, 0), nic(topo, 1), PathType::kPhb, 12);
  checkPath(topo, gpu(topo, 0), nic(topo, 2), PathType::kSys, 6);  // Broadwell QPI
}

TEST_CASE("pcie-2switch: PIX within a switch, PHB across") {
  Topology topo = load("pcie-2switch.xml");
  checkPath(topo, gpu(topo, 0), gpu(topo, 1), PathType::kPix, 24);
  checkPath(topo, gpu(topo, 0), gpu(topo, 2), PathType::kPhb, 24);
  checkPath(topo, gpu(topo, 1), nic(topo, 0), PathType::kPix, 24);
  checkPath(topo, gpu(topo, 3), nic(topo, 0), PathType::kPhb, 24);
}

}  // namespace
}  // namespace tutti::topology::test
