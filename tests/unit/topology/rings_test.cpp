// Ring search: every ring visits every GPU exactly once over existing paths; NVLink where
// NVLink connects the GPUs; estimated bandwidth as computed by hand.
#include <set>

#include "helpers.hpp"

namespace tutti::topology::test {
namespace {

void checkRings(const Topology& topo, const RingPlan& plan, int host = 0) {
  std::vector<int> gpus = topo.nodesOf(NodeKind::kGpu, host);
  REQUIRE(!plan.channels.empty());
  double total = 0;
  for (const Channel& channel : plan.channels) {
    INFO(formatChannel(topo, 0, channel));
    REQUIRE(channel.ring.size() == gpus.size());
    CHECK(std::set<int>(channel.ring.begin(), channel.ring.end()) ==
          std::set<int>(gpus.begin(), gpus.end()));
    for (size_t i = 0; i < channel.ring.size(); ++i) {
      const Path& hop = topo.path(channel.ring[i], channel.ring[(i + 1) % channel.ring.size()]);
      CHECK(!hop.links.empty());
      CHECK(hop.type <= channel.type);
      CHECK(hop.bw >= channel.bw - 1e-9);
    }
    total += channel.bw;
  }
  CHECK(plan.totalBw == Approx(total));
}

// No link carries more than its bandwidth once every channel's hops are reserved.
void checkReservations(const Topology& topo, const RingPlan& plan) {
  std::vector<double> used(topo.links().size(), 0);
  for (const Channel& channel : plan.channels)
    for (size_t i = 0; i < channel.ring.size(); ++i)
      for (int id : topo.path(channel.ring[i], channel.ring[(i + 1) % channel.ring.size()]).links)
        used[id] += channel.bw;
  for (size_t id = 0; id < used.size(); ++id) CHECK(used[id] <= topo.links()[id].bw + 1e-6);
}

TEST_CASE("DGX-1 V100: rings on NVLink only, six lanes per GPU used") {
  Topology topo = load("dgx1-v100.xml");
  RingPlan plan = searchRings(topo);
  checkRings(topo, plan);
  checkReservations(topo, plan);
  for (const Channel& channel : plan.channels) CHECK(channel.type == PathType::kNvl);
  // Each GPU sends on 6 NVLink lanes of 20 GB/s: 120 GB/s in all, as 6 rings of 20 (the
  // double-lane cycle twice each way, the single-lane cycle once each way).
  CHECK(plan.totalBw == Approx(120).epsilon(0.05));
  CHECK(plan.channels.size() == 6);
}

TEST_CASE("4-GPU PCIe box with two switches: one ring through the CPU at Gen4 x16") {
  Topology topo = load("pcie-2switch.xml");
  RingPlan plan = searchRings(topo);
  checkRings(topo, plan);
  checkReservations(topo, plan);
  REQUIRE(plan.channels.size() == 1);
  CHECK(plan.channels[0].type == PathType::kPhb);
  CHECK(plan.totalBw == Approx(24).epsilon(0.05));
  // The two GPUs of a switch are neighbours: the ring crosses each uplink once per direction.
  const auto& ring = plan.channels[0].ring;
  CHECK(topo.path(ring[0], ring[1]).type == PathType::kPix);
}

TEST_CASE("H100 with NVSwitch: one NVLink ring at the full NVSwitch bandwidth") {
  Topology topo = load("oci-bm-gpu-h100.xml");
  RingPlan plan = searchRings(topo);
  checkRings(topo, plan);
  checkReservations(topo, plan);
  CHECK(plan.channels[0].type == PathType::kNvl);
  CHECK(plan.totalBw == Approx(18 * 20.6).epsilon(0.05));
}

TEST_CASE("two-socket PCIe boxes: rings limited by the CPU interconnect") {
  struct Case {
    const char* file;
    double total;
  };
  for (Case c : {Case{"azure-ndv2.xml", 10}, Case{"aws-p4d.xml", 10}, Case{"azure-ndv5.xml", 22}}) {
    INFO(c.file);
    Topology topo = load(c.file);
    RingPlan plan = searchRings(topo);
    checkRings(topo, plan);
    checkReservations(topo, plan);
    CHECK(plan.channels[0].type == PathType::kSys);
    CHECK(plan.totalBw == Approx(c.total).epsilon(0.05));
  }
}

TEST_CASE("each host of a fused file gets its own ring; a host without GPUs none") {
  Topology topo = load("fused-2host.xml");
  for (int host = 0; host < 2; ++host) {
    RingPlan plan = searchRings(topo, host);
    REQUIRE(plan.channels.size() == 1);
    CHECK(plan.channels[0].ring.size() == 1);
  }
  CHECK(searchRings(topo, 5).channels.empty());
}

TEST_CASE("formatChannel prints GPU indices, the path type and the bandwidth") {
  Topology topo = load("pcie-2switch.xml");
  RingPlan plan = searchRings(topo);
  CHECK(formatChannel(topo, 0, plan.channels[0]) == "ring 0: 0 1 2 3 via PHB 24 GB/s");
}

TEST_CASE("CPU-only ranks are ordered by package, NUMA node and core") {
  std::vector<RankPlace> places{{0, 1, 1, 4}, {1, 0, 0, 2}, {2, 1, 1, 0}, {3, 0, 0, 0}};
  CHECK(cpuRingOrder(places) == std::vector<int>{3, 1, 2, 0});
}

}  // namespace
}  // namespace tutti::topology::test
