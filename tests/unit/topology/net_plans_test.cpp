// Plans across hosts: N copies of one host, rings with rail alignment, double binary trees.
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "helpers.hpp"

namespace tutti::topology::test {
namespace {

// Every ring visits every GPU of every host exactly once, host by host, over existing links;
// channel c enters each host at a GPU within `nicType` of NIC c and leaves at one within
// `nicType` of its exit NIC.
void checkNetRings(const Topology& topo, const RingPlan& plan, PathType nicType) {
  std::vector<int> gpus = topo.nodesOf(NodeKind::kGpu);
  REQUIRE(!plan.channels.empty());
  double total = 0;
  for (size_t c = 0; c < plan.channels.size(); ++c) {
    const Channel& channel = plan.channels[c];
    INFO(formatChannel(topo, static_cast<int>(c), channel));
    CHECK(channel.rail == static_cast<int>(c));
    CHECK(channel.type == PathType::kNet);
    REQUIRE(channel.ring.size() == gpus.size());
    CHECK(std::set<int>(channel.ring.begin(), channel.ring.end()) ==
          std::set<int>(gpus.begin(), gpus.end()));
    size_t n = channel.ring.size();
    for (size_t i = 0; i < n; ++i) {
      int from = channel.ring[i], to = channel.ring[(i + 1) % n];
      int fromHost = topo.node(from).host, toHost = topo.node(to).host;
      if (fromHost == toHost) {
        CHECK(!topo.path(from, to).links.empty());
        continue;
      }
      CHECK(toHost == (fromHost + 1) % static_cast<int>(topo.hosts().size()));
      CHECK(topo.path(from, nic(topo, channel.exitRail, fromHost)).type <= nicType);
      CHECK(topo.path(nic(topo, channel.rail, toHost), to).type <= nicType);
    }
    total += channel.bw;
  }
  CHECK(plan.totalBw == Approx(total));
}

TEST_CASE("replicateHosts: N copies of one host, NET between them") {
  Topology one = load("dgx1-v100.xml");
  Topology topo = replicateHosts(one, 4);
  REQUIRE(topo.hosts().size() == 4);
  CHECK(topo.nodes().size() == 4 * one.nodes().size());
  CHECK(topo.links().size() == 4 * one.links().size());
  CHECK(topo.nodesOf(NodeKind::kGpu, 3).size() == 8);
  CHECK(topo.path(gpu(topo, 0, 3), gpu(topo, 3, 3)).type == PathType::kNvl);
  CHECK(topo.path(gpu(topo, 0, 0), gpu(topo, 0, 1)).type == PathType::kNet);
  CHECK(topo.node(gpu(topo, 5, 2)).parent >= 0);
  CHECK(topo.node(topo.node(gpu(topo, 5, 2)).parent).host == 2);
  CHECK_THROWS(replicateHosts(one, 0));
  // Each copy's paths are the original's; across hosts NET, at the narrower end's widest way to
  // one of its host's network ports (a port's own way unbounded).
  const int size = static_cast<int>(one.nodes().size());
  const auto widest = [&](int node) {
    if (one.node(node).kind == NodeKind::kNet) return std::numeric_limits<double>::infinity();
    double best = 0;
    for (int port : one.nodesOf(NodeKind::kNet, 0)) best = std::max(best, one.path(node, port).bw);
    return best;
  };
  for (int a = 0; a < size; ++a)
    for (int b = 0; b < size; ++b) {
      const Path &original = one.path(a, b), &copy = topo.path(3 * size + a, 3 * size + b);
      CHECK((copy.type == original.type && copy.bw == original.bw));
      CHECK(copy.links.size() == original.links.size());
      const Path& across = topo.path(a, 2 * size + b);
      CHECK(across.type == PathType::kNet);
      CHECK(across.bw == std::min(widest(a), widest(b)));
      CHECK(across.links.empty());
    }
}

TEST_CASE("DGX-1 V100 across hosts: one ring per NIC, entering and leaving at its switch") {
  // Each of the 4 NICs (100 Gb/s: 12.5 GB/s) hangs off a PCIe Gen3 x16 switch (12 GB/s) with two
  // GPUs; the in-host NVLink rings (20 GB/s) that have those two GPUs next to each other are cut
  // open there, so each channel runs at 12 GB/s: 4 x 12 = 48 GB/s.
  for (int hosts : {2, 4, 16}) {
    INFO(hosts << " hosts");
    Topology topo = replicateHosts(load("dgx1-v100.xml"), hosts);
    RingPlan plan = searchNetRings(topo);
    checkNetRings(topo, plan, PathType::kPix);
    CHECK(plan.channels.size() == 4);
    CHECK(plan.totalBw == Approx(48).epsilon(0.05));
  }
}

TEST_CASE("aws-p4d across hosts: rail-aligned, bounded by the CPU interconnect") {
  // 4 NICs listed without ports (their PCIe side bounds them: 12 GB/s). Every chain spans both
  // sockets, so it crosses the 10 GB/s CPU interconnect once in each direction; the 4 channels
  // share it: 2.5 GB/s each, 10 GB/s in total.
  Topology topo = replicateHosts(load("aws-p4d.xml"), 4);
  RingPlan plan = searchNetRings(topo);
  checkNetRings(topo, plan, PathType::kPix);
  CHECK(plan.channels.size() == 4);
  for (const Channel& channel : plan.channels) CHECK(channel.bw == Approx(2.5).epsilon(0.05));
  CHECK(plan.totalBw == Approx(10).epsilon(0.05));
}

TEST_CASE("H100 hosts with one GPU per NIC: channels cross NICs in pairs, at the NICs' speed") {
  // OCI BM.GPU.H100.8: GPU i and NIC i share a switch (PXB, 48 GB/s), other GPUs reach NIC i
  // through the CPU at the Gen2 upstream links' 6 GB/s. The GPU after the entry on a ring can
  // leave only through another NIC, so channels 2k and 2k+1 cross: in by NIC 2k, out by NIC 2k+1
  // and back. Each channel then runs at a port's 180 Gb/s (22.5 GB/s): 8 x 22.5 = 180 GB/s.
  // Leaving by the entry's NIC, as before, every channel crossed the CPU: 1.5 GB/s each.
  for (int hosts : {2, 16}) {
    INFO(hosts << " hosts");
    Topology topo = replicateHosts(load("oci-bm-gpu-h100.xml"), hosts);
    RingPlan plan = searchNetRings(topo);
    checkNetRings(topo, plan, PathType::kPxb);
    REQUIRE(plan.channels.size() == 8);
    for (int c = 0; c < 8; ++c) {
      CHECK(plan.channels[c].exitRail == (c ^ 1));
      CHECK(plan.channels[c].bw == Approx(22.5));
    }
    CHECK(plan.totalBw == Approx(180));
  }
  Topology two = replicateHosts(load("oci-bm-gpu-h100.xml"), 2);
  CHECK(formatChannel(two, 1, searchNetRings(two).channels[1]) ==
        "ring 1: 0/1 0/2 0/3 0/4 0/5 0/6 0/7 0/0 1/1 1/2 1/3 1/4 1/5 1/6 1/7 1/0 via NET 22.5 GB/s "
        "on NIC 1 in, NIC 0 out");
}

TEST_CASE("a fused file's real hosts: one GPU each, bounded by the slower NIC") {
  // Host 0: 200 Gb/s NIC behind 24 GB/s PCIe; host 1: 100 Gb/s (12.5 GB/s) behind Gen3 x16 (12).
  Topology topo = load("fused-2host.xml");
  RingPlan plan = searchNetRings(topo);
  checkNetRings(topo, plan, PathType::kPhb);
  REQUIRE(plan.channels.size() == 1);
  CHECK(plan.totalBw == Approx(12).epsilon(0.05));
  CHECK(formatChannel(topo, 0, plan.channels[0]) == "ring 0: 0/0 1/0 via NET 12 GB/s on NIC 0");
}

TEST_CASE("one host: the rings across hosts are the host's own") {
  Topology topo = load("pcie-2switch.xml");
  CHECK(searchNetRings(topo).totalBw == Approx(searchRings(topo).totalBw));
}

int depth(const Tree& tree, int host) {
  int d = 0;
  for (int at = tree.hosts[host].parent; at >= 0; at = tree.hosts[at].parent) ++d;
  return d;
}

TEST_CASE("double binary trees: shape, depth ~ log2(hosts), interior in at most one tree") {
  for (int hosts : {2, 3, 4, 5, 8, 13, 16}) {
    INFO(hosts << " hosts");
    Topology topo = replicateHosts(load("dgx1-v100.xml"), hosts);
    TreePlan plan = searchTrees(topo);
    REQUIRE(plan.trees.size() == 2);
    int interiorInBoth = 0;
    std::vector<int> interior(hosts, 0);
    for (int t = 0; t < 2; ++t) {
      const Tree& tree = plan.trees[t];
      INFO(formatTreeChannel(topo, t, tree));
      CHECK(tree.rail == t);
      int roots = 0, maxDepth = 0;
      for (int h = 0; h < hosts; ++h) {
        const TreeNode& node = tree.hosts[h];
        roots += node.parent < 0;
        CHECK(node.children.size() <= 2);
        for (int child : node.children) CHECK(tree.hosts[child].parent == h);
        maxDepth = std::max(maxDepth, depth(tree, h));  // terminates: no cycle
        interior[h] += !node.children.empty() && node.parent >= 0;
        // The chain visits every GPU of the host once, its head next to NIC t.
        std::vector<int> gpus = topo.nodesOf(NodeKind::kGpu, h);
        CHECK(std::set<int>(tree.chains[h].begin(), tree.chains[h].end()) ==
              std::set<int>(gpus.begin(), gpus.end()));
        CHECK(topo.path(nic(topo, t, h), tree.chains[h].front()).type == PathType::kPix);
      }
      CHECK(roots == 1);
      CHECK(maxDepth <= static_cast<int>(std::ceil(std::log2(hosts))));
      CHECK(tree.bw == Approx(12).epsilon(0.05));  // head to NIC: PCIe Gen3 x16
    }
    for (int count : interior) interiorInBoth += count == 2;
    CHECK(interiorInBoth <= (hosts % 2 == 0 ? 0 : 1));
  }
}

TEST_CASE("no trees or rings across hosts without NICs or without in-host rings") {
  Topology topo = replicateHosts(load("oci-bm-gpu-h100.xml"), 2);
  CHECK(searchTrees(topo).trees.size() == 2);
  Topology bare;
  bare.addHost("a");
  bare.addHost("b");
  for (int host = 0; host < 2; ++host) {
    Node node;
    node.kind = NodeKind::kGpu;
    node.host = host;
    bare.addNode(node);
  }
  bare.computePaths();
  CHECK(searchTrees(bare).trees.empty());
  CHECK(searchNetRings(bare).channels.empty());
  RingSearchOptions none;
  none.maxChannels = 0;
  CHECK(searchTrees(topo, none).trees.empty());
  CHECK(searchNetRings(topo, none).channels.empty());
}

}  // namespace
}  // namespace tutti::topology::test
