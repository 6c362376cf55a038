// The device channels' rings (runtime/gpu/channel_rings.hpp) on a real machine's topology: a DGX-1
// (NVLink hybrid cube mesh), whose NCCL search gives channels over different NVLinks.
#include "runtime/gpu/channel_rings.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <numeric>
#include <random>
#include <set>

#include "base/byte_codec.hpp"
#include "base/error.hpp"
#include "runtime/topology_plan.hpp"
#include "topology/topology.hpp"

namespace tutti::runtime::gpu {
namespace {

using topology::NodeKind;
using topology::PathType;
using topology::Topology;

Topology dgx1() {
  Topology topo = topology::loadTopologyFile(std::string(TUTTI_TOPO_FIXTURES) + "/dgx1-v100.xml");
  topo.computePaths();
  return topo;
}

// Ranks on the topology's GPUs: rank r on GPU gpuOf[r].
std::vector<GpuFacts> ranksOn(const Topology& topo, const std::vector<int>& gpuOf) {
  const std::vector<int> gpus = topo.nodesOf(NodeKind::kGpu, 0);
  std::vector<GpuFacts> facts(gpuOf.size());
  for (size_t r = 0; r < gpuOf.size(); ++r)
    facts[r].busId = topo.node(gpus[static_cast<size_t>(gpuOf[r])]).busId;
  return facts;
}

std::vector<std::string> busIdsOf(const std::vector<GpuFacts>& facts) {
  std::vector<std::string> ids;
  for (const GpuFacts& f : facts) ids.push_back(f.busId);
  return ids;
}

PathType hopType(const Topology& topo, const std::string& from, const std::string& to) {
  return topo.path(topo.findBusId(0, from), topo.findBusId(0, to)).type;
}

// The farthest hop of the best ring over `gpus` (bus ids, each once), found by trying every ring.
PathType bestFarthestHop(const Topology& topo, std::vector<std::string> gpus) {
  std::sort(gpus.begin() + 1, gpus.end());
  PathType best = PathType::kNet;
  do {
    PathType farthest = PathType::kLoc;
    for (size_t i = 0; i < gpus.size() && gpus.size() > 1; ++i)
      farthest = std::max(farthest, hopType(topo, gpus[i], gpus[(i + 1) % gpus.size()]));
    best = std::min(best, farthest);
  } while (std::next_permutation(gpus.begin() + 1, gpus.end()));
  return best;
}

// What makes an order a good ring on these GPUs, checked without the planner's logic: each rank
// once; the ranks of one GPU next to each other, in the CPU ring's order; no hop between GPUs
// farther than the best ring over them needs.
void checkRing(const Topology& topo, const std::vector<GpuFacts>& facts,
               const std::vector<int>& cpuOrder, const std::vector<int>& order) {
  const size_t n = facts.size();
  REQUIRE(order.size() == n);
  CHECK(std::set<int>(order.begin(), order.end()).size() == n);
  std::vector<size_t> cpuPlace(n);
  for (size_t p = 0; p < n; ++p) cpuPlace[static_cast<size_t>(cpuOrder[p])] = p;
  std::vector<std::string> gpus;  // in the order the ring reaches them
  for (const int rank : order)
    if (std::find(gpus.begin(), gpus.end(), facts[size_t(rank)].busId) == gpus.end())
      gpus.push_back(facts[size_t(rank)].busId);
  const PathType allowed = bestFarthestHop(topo, gpus);
  std::set<std::string> left;  // GPUs the ring has moved on from
  for (size_t p = 0; p < n; ++p) {
    const GpuFacts& here = facts[static_cast<size_t>(order[p])];
    const GpuFacts& next = facts[static_cast<size_t>(order[(p + 1) % n])];
    if (here.busId == next.busId) {
      if (p + 1 < n) CHECK(cpuPlace[size_t(order[p])] < cpuPlace[size_t(order[p + 1])]);
      continue;
    }
    CHECK(left.insert(here.busId).second);  // a GPU's ranks come together, once
    INFO(here.busId << " -> " << next.busId);
    CHECK(hopType(topo, here.busId, next.busId) <= allowed);
  }
}

TEST_CASE("channel rings: one rank per GPU follows each of the topology's rings",
          "[runtime][channel-rings]") {
  const Topology topo = dgx1();
  const std::vector<int> cpuOrder = {0, 1, 2, 3, 4, 5, 6, 7};
  const std::vector<GpuFacts> facts = ranksOn(topo, cpuOrder);
  const GpuRings rings = gpuRingsOf(topo, busIdsOf(facts));
  REQUIRE(rings.size() >= 2);
  std::set<std::vector<std::string>> distinct(rings.begin(), rings.end());
  CHECK(distinct.size() >= 2);  // the mesh's point: channels over different links
  const ChannelRings plan =
      planChannelRings(facts, std::vector<std::string>(8, "a"), cpuOrder, false, rings);
  CHECK(plan.why.empty());
  REQUIRE(plan.orders.size() == rings.size());
  for (size_t k = 0; k < rings.size(); ++k) {
    INFO("ring " << k);
    checkRing(topo, facts, cpuOrder, plan.orders[k]);
    for (size_t p = 0; p < 8; ++p)  // a DGX-1 has rings over direct NVLinks only
      CHECK(hopType(topo, rings[k][p], rings[k][(p + 1) % 8]) == PathType::kNvl);
    // Rank r is on GPU r: the order is the topology's ring, GPU by GPU.
    for (size_t p = 0; p < 8; ++p) CHECK(facts[size_t(plan.orders[k][p])].busId == rings[k][p]);
  }
}

TEST_CASE("channel rings: ranks sharing GPUs stay together, in the CPU ring's order",
          "[runtime][channel-rings]") {
  const Topology topo = dgx1();
  std::mt19937_64 rng(20261206);
  for (int trial = 0; trial < 20; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 15);
    std::vector<int> gpuOf(static_cast<size_t>(n)), cpuOrder(static_cast<size_t>(n));
    for (int& gpu : gpuOf) gpu = static_cast<int>(rng() % 8);
    std::iota(cpuOrder.begin(), cpuOrder.end(), 0);
    std::shuffle(cpuOrder.begin(), cpuOrder.end(), rng);
    const std::vector<GpuFacts> facts = ranksOn(topo, gpuOf);
    const GpuRings rings = gpuRingsOf(topo, busIdsOf(facts));  // over the GPUs in use only
    const ChannelRings plan =
        planChannelRings(facts, std::vector<std::string>(size_t(n), "a"), cpuOrder, false, rings);
    CHECK(plan.why.empty());
    REQUIRE(plan.orders.size() == rings.size());
    for (const std::vector<int>& order : plan.orders) {
      INFO("trial " << trial << ", " << n << " ranks");
      checkRing(topo, facts, cpuOrder, order);
    }
  }
}

TEST_CASE("channel rings: the rings record round trips, and what a peer sends wrong is refused",
          "[runtime][channel-rings]") {
  const GpuRings rings = {{"0000:06:00.0", "0000:07:00.0"}, {"0000:07:00.0", "0000:06:00.0"}, {}};
  CHECK(decodeGpuRings(encodeGpuRings(rings), 0, 1) == rings);
  CHECK(decodeGpuRings(encodeGpuRings({}), 0, 1).empty());
  const std::string good = encodeGpuRings(rings);
  const auto refusal = [](const std::string& bytes) {
    try {
      decodeGpuRings(bytes, 1, 3);
    } catch (const Error& error) {
      CHECK(error.code() == ErrorCode::kRemote);
      return std::string(error.what());
    }
    return std::string("accepted");
  };
  for (size_t length = 0; length < good.size(); ++length)
    CHECK_THAT(refusal(good.substr(0, length)), Catch::Contains("rank 1: rank 3's GPU rings"));
  CHECK_THAT(refusal(good + "x"), Catch::Contains("rank 3's GPU rings"));
  std::string version = good;
  version[0] = 7;
  CHECK_THAT(refusal(version), Catch::Contains("version 7"));
  ByteWriter many;
  many.u32(1).u32(65);
  CHECK_THAT(refusal(std::string(many.bytes())), Catch::Contains("65 rings"));
  ByteWriter large;
  large.u32(1).u32(1).u32(1025);
  CHECK_THAT(refusal(std::string(large.bytes())), Catch::Contains("a ring of 1025 GPUs"));
  ByteWriter busId;
  busId.u32(1).u32(1).u32(1).str(std::string(65, '0'));
  CHECK_THAT(refusal(std::string(busId.bytes())), Catch::Contains("65"));
}

TEST_CASE("channel rings: the CPU ring on every channel, and why", "[runtime][channel-rings]") {
  const Topology topo = dgx1();
  const std::vector<int> cpuOrder = {1, 0, 3, 2};
  const std::vector<std::string> oneHost(4, "a");
  const auto cpuRingBecause = [&](const ChannelRings& plan, const std::string& why) {
    CHECK(plan.orders == std::vector<std::vector<int>>{cpuOrder});
    CHECK_THAT(plan.why, Catch::Contains(why));
  };
  std::vector<GpuFacts> facts = ranksOn(topo, {0, 1, 2, 3});
  const GpuRings rings = gpuRingsOf(topo, busIdsOf(facts));
  REQUIRE_FALSE(rings.empty());
  CHECK(planChannelRings(facts, oneHost, cpuOrder, false, rings).why.empty());
  CHECK_FALSE(ringsFromGpus(oneHost, true));
  cpuRingBecause(planChannelRings(facts, oneHost, cpuOrder, true, rings), "TUTTI_RING_ORDER");
  CHECK_FALSE(ringsFromGpus({"a", "a", "b", "b"}, false));
  cpuRingBecause(planChannelRings(facts, {"a", "a", "b", "b"}, cpuOrder, false, rings),
                 "span hosts");
  cpuRingBecause(planChannelRings(facts, oneHost, cpuOrder, false, {}), "no rings over the");
  facts[3].busId = "0000:ff:00.0";
  CHECK(gpuRingsOf(topo, busIdsOf(facts)).front().size() == 3);  // the GPU it lacks left out
  cpuRingBecause(planChannelRings(facts, oneHost, cpuOrder, false, rings),
                 "rank 3's GPU (0000:ff:00.0) is in none of the topology's rings");
  facts[3].busId.clear();
  cpuRingBecause(planChannelRings(facts, oneHost, cpuOrder, false, rings),
                 "rank 3's GPU (no bus id)");
  CHECK_THROWS_AS(planChannelRings(facts, {"a"}, cpuOrder, false, rings), Error);
  CHECK_THROWS_AS(planChannelRings(facts, oneHost, {0, 1}, false, rings), Error);
}

TEST_CASE("channel rings: a topology without GPUs plans none", "[runtime][channel-rings]") {
  Topology topo =
      topology::loadTopologyFile(std::string(TUTTI_TOPO_FIXTURES) + "/hwloc-dev-vm.xml");
  topo.computePaths();
  CHECK(gpuRingsOf(topo, {"0000:06:00.0"}).empty());
}

}  // namespace
}  // namespace tutti::runtime::gpu
