// The all-reduce cost model against figures worked out by hand from the fixtures' plans:
// bandwidths from the planned channels, latencies from NCCL's Simple-protocol step figures
// (base 8.4 us; a step 3.4 us over NVLink, 5.7 us over PCIe, 14 us over the network).
#include <cmath>

#include "helpers.hpp"

namespace tutti::topology::test {
namespace {

const AlgorithmCost& named(const AllReduceCosts& costs, const std::string& name) {
  for (const AlgorithmCost& algorithm : costs.algorithms)
    if (algorithm.name == name) return algorithm;
  FAIL("no " << name);
  throw;
}

TEST_CASE("cost model: one PCIe host, the ring alone, by hand") {
  // 4 GPUs, one ring of 24 GB/s through the host bridge (PHB): 2(4-1) = 6 steps over PCIe.
  AllReduceCosts costs = priceAllReduce(load("pcie-2switch.xml"));
  CHECK(costs.ranks == 4);
  CHECK(costs.hosts == 1);
  REQUIRE(costs.algorithms.size() == 1);
  const AlgorithmCost& ring = named(costs, "ring");
  CHECK(ring.channels == 1);
  CHECK(ring.busBw == Approx(24));
  CHECK(ring.algBw == Approx(16));                 // 24 x 4 / (2 x 3)
  CHECK(ring.latencyUs == Approx(42.6));           // 8.4 + 6 x 5.7
  CHECK(ring.timeUs(1 << 20) == Approx(108.136));  // 42.6 + 1048576 B / 16000 B/us
  CHECK(ring.busBwAt(1 << 20, 4) == Approx(14.5451).epsilon(1e-4));  // 1.5 x 1048576 / 108.136
  CHECK(costs.best(1 << 20) == &costs.algorithms[0]);
}

TEST_CASE("cost model: 8 H100 with 8 x 400 Gb/s NICs, one and two hosts, by hand") {
  Topology one = load("hgx-h100-8x400g.xml");
  AllReduceCosts single = priceAllReduce(one);
  REQUIRE(single.algorithms.size() == 1);
  CHECK(single.algorithms[0].busBw == Approx(370.8));     // 18 NVLinks x 20.6 GB/s
  CHECK(single.algorithms[0].latencyUs == Approx(56.0));  // 8.4 + 14 x 3.4

  AllReduceCosts two = priceAllReduce(replicateHosts(one, 2));
  CHECK(two.ranks == 16);
  CHECK(two.hosts == 2);
  REQUIRE(two.algorithms.size() == 2);
  // 8 channels, each bounded by its GPU's and NIC's PCIe Gen5 x16 switch link (48 GB/s);
  // 30 steps, of which 2 cross the network.
  const AlgorithmCost& ring = named(two, "ring");
  CHECK(ring.channels == 8);
  CHECK(ring.busBw == Approx(384));
  CHECK(ring.algBw == Approx(204.8));      // 384 x 16 / 30
  CHECK(ring.latencyUs == Approx(131.6));  // 8.4 + 28 x 3.4 + 2 x 14
  // Two trees of 48 GB/s on NICs 0 and 1; a chain of 8 GPUs and 1 network hop, both ways.
  const AlgorithmCost& tree = named(two, "tree");
  CHECK(tree.channels == 2);
  CHECK(tree.algBw == Approx(48));        // (48 + 48) / 2
  CHECK(tree.busBw == Approx(90));        // 48 x 30 / 16
  CHECK(tree.latencyUs == Approx(84.0));  // 8.4 + 2 x (7 x 3.4 + 1 x 14)
  // 1 MiB: ring 131.6 + 5.12 us, tree 84 + 21.845 us; 1 GiB: ring 5374.5 us, tree 22453 us.
  CHECK(two.best(1 << 20)->name == "tree");
  CHECK(two.best(1 << 30)->name == "ring");
  // 8 GiB: 131.6 + 41943.04 us; busbw 1.875 x 8589934592 B / 42074.64 us.
  CHECK(ring.busBwAt(std::pow(2.0, 33), 16) == Approx(382.799).epsilon(1e-5));
}

TEST_CASE("cost model: trees on one NIC share it; nothing to price without two GPUs") {
  // One GPU and one NIC per host: both trees use NIC 0 at 12 GB/s, so together 12, not 24.
  AllReduceCosts fused = priceAllReduce(load("fused-2host.xml"));
  CHECK(fused.ranks == 2);
  CHECK(named(fused, "ring").busBw == Approx(12));
  CHECK(named(fused, "ring").latencyUs == Approx(36.4));  // 8.4 + 2 x 14
  CHECK(named(fused, "tree").algBw == Approx(6));
  CHECK(named(fused, "tree").latencyUs == Approx(36.4));  // 8.4 + 2 x (0 + 1 x 14)

  AllReduceCosts none = priceAllReduce(loadTopologyFile(fixture("hwloc-dev-vm.xml")));
  CHECK(none.ranks == 0);
  CHECK(none.algorithms.empty());
  CHECK(none.best(1024) == nullptr);
  AllReduceCosts lone = priceAllReduce(loadTopologyFile(fixture("hwloc-dual-port-nic.xml")));
  CHECK(lone.ranks == 1);
  CHECK(lone.algorithms.empty());
}

}  // namespace
}  // namespace tutti::topology::test
