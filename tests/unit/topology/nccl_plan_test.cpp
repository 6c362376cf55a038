// tutti's plan against what NCCL planned on the same machine, from published NCCL INFO logs
// (tests/fixtures/nccl-logs, with their sources): NCCL 2.9.9 on two AWS p4d.24xlarge hosts, with
// aws-ofi-nccl's p4d topology file (the fixture aws-p4d.xml). NCCL's rings there also follow the
// NVLinks it found through NVML, which the file does not hold, so the order inside a host is not
// comparable; where each channel enters and leaves a host, and through which NIC, is.
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "helpers.hpp"

namespace tutti::topology::test {
namespace {

constexpr int kGpusPerHost = 8;

struct HostPart {
  std::set<int> ends;  // the host's GPUs (by index) where the channel enters and leaves it
  int nic;             // the NIC index whose GPUs they are (-1: not one NIC's)
};

std::ifstream openLog(const std::string& log) {
  std::ifstream in(std::string(TUTTI_TOPO_FIXTURES) + "/../nccl-logs/" + log);
  REQUIRE(in);
  return in;
}

// The ring lines of rank 0, each ring's ranks in order.
std::vector<std::vector<int>> ncclRings(const std::string& log) {
  std::ifstream in = openLog(log);
  const std::regex ringLine(R"(\[0\] NCCL INFO Channel (\d+)/(\d+) :((\s+\d+)+)\s*$)");
  std::vector<std::vector<int>> rings;
  for (std::string line; std::getline(in, line);) {
    std::smatch match;
    if (!std::regex_search(line, match, ringLine)) continue;
    std::istringstream ranks(match[3].str());
    rings.emplace_back();
    for (int rank; ranks >> rank;) rings.back().push_back(rank);
  }
  return rings;
}

// Rank r runs on host r / 8 and on its GPU r % 8: the log's "rank R ... cudaDev D busId B"
// lines say so, checked below against the fixture's bus ids.
std::map<std::string, int> cudaDevsByBusId(const std::string& log) {
  std::ifstream in = openLog(log);
  const std::regex initLine(R"(rank (\d+) nranks \d+ cudaDev (\d+) busId ([0-9a-f]+) - Init)");
  std::map<std::string, int> devs;
  for (std::string line; std::getline(in, line);) {
    std::smatch match;
    if (!std::regex_search(line, match, initLine)) continue;
    CHECK(std::stoi(match[1]) % kGpusPerHost == std::stoi(match[2]));
    devs[match[3]] = std::stoi(match[2]);
  }
  return devs;
}

// The GPU's NIC: the one on the same PCI switch (PIX), else -1.
int nicOf(const Topology& topo, int gpuIndex, int host) {
  const auto nics = topo.nodesOf(NodeKind::kNic, host);
  for (size_t n = 0; n < nics.size(); ++n)
    if (topo.path(gpu(topo, gpuIndex, host), nics[n]).type <= PathType::kPix)
      return static_cast<int>(n);
  return -1;
}

HostPart partOf(const Topology& topo, int entry, int exit) {
  const int nic = nicOf(topo, entry, 0);
  return {{entry, exit}, nic == nicOf(topo, exit, 0) ? nic : -1};
}

// Each distinct channel's part on host `host`: a ring of ranks is cut where it changes host.
std::set<std::pair<std::set<int>, int>> ncclParts(const Topology& topo,
                                                  const std::vector<std::vector<int>>& rings,
                                                  int host) {
  std::set<std::pair<std::set<int>, int>> parts;
  for (const std::vector<int>& ring : rings) {
    const size_t n = ring.size();
    for (size_t i = 0; i < n; ++i) {
      const int rank = ring[i], before = ring[(i + n - 1) % n];
      if (rank / kGpusPerHost != host || before / kGpusPerHost == host) continue;
      size_t last = i;
      while (ring[(last + 1) % n] / kGpusPerHost == host) last = (last + 1) % n;
      const HostPart part = partOf(topo, rank % kGpusPerHost, ring[last] % kGpusPerHost);
      parts.insert({part.ends, part.nic});
    }
  }
  return parts;
}

}  // namespace

TEST_CASE("across two p4d hosts tutti's channels enter and leave each host where NCCL's do") {
  const Topology one = load("aws-p4d.xml");
  const std::map<std::string, int> devs = cudaDevsByBusId("aws-p4d-2-hosts.log");
  REQUIRE(devs.size() == kGpusPerHost);
  // NCCL's busId 101c0 is 0000:10:1c.0: cudaDev d is the fixture's GPU d.
  for (const auto& [busId, dev] : devs) {
    INFO(busId);
    std::string full = "0000:" + std::string(5 - busId.size(), '0') + busId;
    full = full.substr(0, 7) + ":" + full.substr(7, 2) + "." + full.substr(9);
    CHECK(one.node(gpu(one, dev)).busId == full);
  }
  const std::vector<std::vector<int>> rings = ncclRings("aws-p4d-2-hosts.log");
  REQUIRE(rings.size() == 8);
  const Topology two = replicateHosts(one, 2);
  const RingPlan plan = searchNetRings(two);
  for (int host = 0; host < 2; ++host) {
    INFO("host " << host);
    const auto expected = ncclParts(one, rings, host);
    // NCCL: 4 distinct channels (8 = 4 twice), each entering and leaving at the two GPUs of one
    // NIC's switch, a different NIC each: {0,1} NIC 0, {2,3} NIC 1, {4,5} NIC 2, {6,7} NIC 3.
    REQUIRE(expected.size() == 4);
    std::set<std::pair<std::set<int>, int>> planned;
    for (const Channel& channel : plan.channels) {
      const auto gpus = two.nodesOf(NodeKind::kGpu, host);
      std::vector<int> chain;
      for (int id : channel.ring)
        if (two.node(id).host == host) chain.push_back(two.node(id).index);
      REQUIRE(chain.size() == gpus.size());
      const HostPart part = partOf(one, chain.front(), chain.back());
      CHECK(part.nic == channel.rail);
      CHECK(channel.exitRail == channel.rail);  // the same NIC in and out, as NCCL's
      planned.insert({part.ends, part.nic});
    }
    CHECK(planned == expected);
  }
}

}  // namespace tutti::topology::test

namespace tutti::topology::test {

// NCCL's path types for Grace-class CPUs (src/graph/paths.cc): a GPU's C2C link to its CPU is a
// C2C path (between NVB and PIX), and the NICs nearest the GPU that hang off that CPU are P2C
// (C2C then the host bridge), not PHB; a NIC farther than the nearest keeps its type.
TEST_CASE("a GPU reaches its CPU over C2C as C2C, and the CPU's nearest NIC as P2C") {
  const std::string grace =
      "<system version=\"1\">\n"
      "<cpu numaid=\"0\" affinity=\"ff\" arch=\"arm64\">\n"
      "<pci busid=\"0009:01:00.0\" class=\"0x030200\" link_speed=\"32.0 GT/s PCIe\" "
      "link_width=\"16\">\n<gpu dev=\"0\" sm=\"90\" rank=\"0\" gdr=\"1\">\n"
      "<c2c bw=\"40000\" count=\"10\"/>\n</gpu>\n</pci>\n"
      "<pci busid=\"0008:00:00.0\" class=\"0x060400\" link_speed=\"32.0 GT/s PCIe\" "
      "link_width=\"16\">\n"
      "<pci busid=\"0008:01:00.0\" class=\"0x020700\" link_speed=\"32.0 GT/s PCIe\" "
      "link_width=\"16\">\n<nic>\n<net name=\"mlx5_0\" dev=\"0\" speed=\"400000\" port=\"1\" "
      "gdr=\"1\"/>\n</nic>\n</pci>\n</pci>\n</cpu>\n"
      "<cpu numaid=\"1\" affinity=\"ff00\" arch=\"arm64\">\n"
      "<pci busid=\"0018:01:00.0\" class=\"0x020700\" link_speed=\"32.0 GT/s PCIe\" "
      "link_width=\"16\">\n<nic>\n<net name=\"mlx5_1\" dev=\"1\" speed=\"400000\" port=\"1\" "
      "gdr=\"1\"/>\n</nic>\n</pci>\n</cpu>\n</system>\n";
  const Topology topo = parseXml(grace, "grace.xml");
  const int g = gpu(topo, 0);
  CHECK(topo.path(g, nodeAt(topo, NodeKind::kCpu, 0)).type == PathType::kC2c);
  CHECK(topo.path(g, nic(topo, 0)).type == PathType::kP2c);
  CHECK(topo.path(nic(topo, 0), g).type == PathType::kP2c);
  CHECK(topo.path(g, nodeAt(topo, NodeKind::kNet, 0)).type == PathType::kP2c);
  CHECK(topo.path(g, nic(topo, 1)).type == PathType::kSys);
  // GB300: each GPU shares a PCIe switch with its NIC (PXB, nearer than P2C); the NIC of the
  // other GPU on the same CPU is reached through the host bridge, PHB, as NCCL has it.
  const Topology gb300 = load("oci-gb300.xml");
  const int g0 = gpu(gb300, 0);
  CHECK(gb300.path(g0, nodeAt(gb300, NodeKind::kCpu, 0)).type == PathType::kC2c);
  CHECK(gb300.path(g0, nic(gb300, 0)).type == PathType::kPxb);
  CHECK(gb300.path(g0, nic(gb300, 1)).type == PathType::kPhb);
}

}  // namespace tutti::topology::test
