// What NCCL's loader (src/graph/topo.cc) tolerates in a topology file, tutti loads too (issue 23,
// item 1): a link to the device itself, an NVLink to a GPU the file does not hold, a NIC that
// reports its speed as -1. Each loads with what NCCL would make of it, and says what it left out;
// what NCCL refuses (another format version: RCCL's dumps) tutti refuses, naming the line.
#include <filesystem>
#include <fstream>

#include "helpers.hpp"
#include "tests/error_of.hpp"

namespace tutti::topology::test {
namespace {

// Two GPUs and a NIC under one switch: `links` inside GPU 0's <gpu>, `speed` the NIC port's,
// `pciLinks` inside the NIC's <pci>.
std::string machine(const std::string& links, const std::string& speed = "400000",
                    const std::string& pciLinks = "") {
  return "<system version=\"1\">\n"
         "<cpu numaid=\"0\" affinity=\"ff\" arch=\"x86_64\" vendor=\"GenuineIntel\" "
         "familyid=\"6\" modelid=\"143\">\n"
         "<pci busid=\"0000:10:00.0\" class=\"0x060400\" link_speed=\"32.0 GT/s PCIe\" "
         "link_width=\"16\">\n"
         "<pci busid=\"0000:11:00.0\" class=\"0x030200\" link_speed=\"32.0 GT/s PCIe\" "
         "link_width=\"16\">\n<gpu dev=\"0\" sm=\"90\" rank=\"0\" gdr=\"1\">\n" +
         links +
         "</gpu>\n</pci>\n"
         "<pci busid=\"0000:12:00.0\" class=\"0x030200\" link_speed=\"32.0 GT/s PCIe\" "
         "link_width=\"16\">\n<gpu dev=\"1\" sm=\"90\" rank=\"1\" gdr=\"1\"/>\n</pci>\n"
         "<pci busid=\"0000:13:00.0\" class=\"0x020700\" link_speed=\"32.0 GT/s PCIe\" "
         "link_width=\"16\">\n" +
         pciLinks + "<nic>\n<net name=\"mlx5_0\" dev=\"0\" speed=\"" + speed +
         "\" port=\"1\" gdr=\"1\"/>\n</nic>\n</pci>\n</pci>\n</cpu>\n</system>\n";
}

const std::string kToPeer = "<nvlink target=\"0000:12:00.0\" count=\"4\" tclass=\"0x030200\"/>\n";

int linksOf(const Topology& topo, LinkKind kind) {
  int n = 0;
  for (const Link& link : topo.links()) n += link.kind == kind;
  return n;
}

// An NVLink left out changes nothing else: the one NVLink to the peer, its lanes, the path's
// bandwidth are as in `reference`, the file without it.
void checkNvLinksAsIn(const Topology& got, const Topology& reference) {
  CHECK(nvlinkLanes(got) == nvlinkLanes(reference));
  CHECK(linksOf(got, LinkKind::kNvLink) == linksOf(reference, LinkKind::kNvLink));
  CHECK(got.path(gpu(got, 0), gpu(got, 1)).bw ==
        reference.path(gpu(reference, 0), gpu(reference, 1)).bw);
}

}  // namespace

TEST_CASE("an NVLink or a pcilink to the device itself is left out, with a warning") {
  Warnings warnings;
  warnings.expect();
  const Topology reference = parseXml(machine(kToPeer), "ok.xml");
  const Topology selfNvLink = parseXml(
      machine("<nvlink target=\"0000:11:00.0\" count=\"2\" tclass=\"0x030200\"/>\n" + kToPeer),
      "self.xml");
  CHECK(warnings.count({"self.xml", "line 6", "NVLink from the GPU to itself: ignored"}) == 1);
  checkNvLinksAsIn(selfNvLink, reference);
  CHECK(selfNvLink.path(gpu(selfNvLink, 0), gpu(selfNvLink, 1)).type == PathType::kNvl);
  const Topology selfPciLink =
      parseXml(machine(kToPeer, "400000", "<pcilink target=\"0000:13:00.0\"/>\n"), "pci.xml");
  CHECK(warnings.count({"pci.xml", "pcilink from the device to itself: ignored"}) == 1);
  CHECK(linksOf(selfPciLink, LinkKind::kPcie) == linksOf(reference, LinkKind::kPcie));
}

// NCCL looks the target GPU up and connects nothing when it is absent (ncclTopoAddNvLinks).
TEST_CASE("an NVLink to a GPU the file does not hold is left out, with a warning") {
  Warnings warnings;
  warnings.expect();
  const Topology reference = parseXml(machine(kToPeer), "ok.xml");
  const Topology missing = parseXml(
      machine("<nvlink target=\"0000:99:00.0\" count=\"6\" tclass=\"0x030200\"/>\n" + kToPeer),
      "missing.xml");
  CHECK(warnings.count({"missing.xml", "line 6", "NVLink target not in the file: ignored"}) == 1);
  CHECK(warnings.all().size() == 1);
  checkNvLinksAsIn(missing, reference);
}

TEST_CASE("a NIC port whose speed is -1 (some NICs report it) has an unknown speed, as 0") {
  const Topology minusOne = parseXml(machine(kToPeer, "-1"), "nic.xml");
  const Topology zero = parseXml(machine(kToPeer, "0"), "nic0.xml");
  const Node& port = nodeNamed(minusOne, "mlx5_0");
  CHECK_THAT(port.inferred, Catch::Contains("speed unknown"));
  CHECK(minusOne.path(gpu(minusOne, 0), nodeAt(minusOne, NodeKind::kNet, 0)).bw ==
        zero.path(gpu(zero, 0), nodeAt(zero, NodeKind::kNet, 0)).bw);
}

}  // namespace tutti::topology::test

namespace tutti::topology::test {

// RCCL's dumps (AMD GPUs, <xgmi> links) say <system version="2">, which NCCL's loader refuses
// ("XML Topology has wrong version"): tutti refuses them too, naming the line and what NCCL does.
TEST_CASE("RCCL's version 2 dumps are refused as NCCL refuses them, naming the line") {
  const std::string folder = std::string(TUTTI_TOPO_FIXTURES) + "/refused";
  int refused = 0;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    INFO(entry.path().string());
    const std::string message = tutti::tests::messageOf(
        ErrorCode::kInvalidArgument, [&] { loadTopologyFile(entry.path().string()); });
    std::ifstream in(entry.path());
    int line = 1;
    for (std::string text; std::getline(in, text) && text.find("<system") == std::string::npos;)
      ++line;
    CHECK_THAT(message, Catch::Contains(entry.path().string() + ": line " + std::to_string(line) +
                                        ": <system>: unsupported version 2"));
    CHECK_THAT(message, Catch::Contains("NCCL refuses any other too"));
    ++refused;
  }
  CHECK(refused == 2);
}

}  // namespace tutti::topology::test
