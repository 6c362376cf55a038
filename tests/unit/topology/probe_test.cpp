// The hwloc probe of this machine: it may have no GPU and no HCA (logged at INFO, never an
// error); it has at least one CPU, and what it finds exports and imports back unchanged.
#include <chrono>

#include "helpers.hpp"

namespace tutti::topology::test {
namespace {

TEST_CASE("probing this machine finds its CPUs quickly and without warnings") {
  auto start = std::chrono::steady_clock::now();
  Topology topo = probeHost();
  auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start);
  WARN("probe took " << ms.count() << " ms; " << topo.nodes().size() << " nodes, "
                     << topo.nodesOf(NodeKind::kGpu).size() << " GPUs, "
                     << topo.nodesOf(NodeKind::kNic).size() << " NICs");
  CHECK(ms.count() < 2000);  // goal: 200 ms; generous for a loaded CI machine
  REQUIRE(!topo.nodesOf(NodeKind::kCpu).empty());
  for (int nic : topo.nodesOf(NodeKind::kNic))
    CHECK(topo.path(nic, topo.nodesOf(NodeKind::kCpu)[0]).bw > 0);
  Topology again = parseXml(toXml(topo), "probe export");
  CHECK(again.nodes().size() == topo.nodes().size());
  CHECK(again.links().size() == topo.links().size());
}

}  // namespace
}  // namespace tutti::topology::test
