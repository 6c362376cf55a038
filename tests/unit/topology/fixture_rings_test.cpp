// Every topology file in tests/fixtures/topologies loads and plans rings across hosts that are
// rail-aligned and enter and leave each host next to their NICs: the plan of issue 23's "Done
// when", checked on whatever fixtures the folder holds (a fused file with its own hosts, any
// other as 2 and as 3 copies of its host).
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "helpers.hpp"

namespace tutti::topology::test {
namespace {

bool nearAnyNic(const Topology& topo, int gpu) {
  for (int nic : topo.nodesOf(NodeKind::kNic, topo.node(gpu).host))
    if (topo.path(gpu, nic).type <= PathType::kPxb) return true;
  return false;
}

// One host's part of one channel: `chain` entered from NIC `in` and left through NIC `out`.
// The entry is within PXB of `in` when any GPU is; the exit is within PXB of `out` whenever a GPU
// other than the entry is within PXB of any of the host's NICs (so a channel leaves through a
// distant bridge only where no near GPU is left to leave from).
void checkHostPart(const Topology& topo, const std::vector<int>& chain, int in, int out) {
  std::vector<int> gpus = topo.nodesOf(NodeKind::kGpu, topo.node(chain.front()).host);
  CHECK(std::multiset<int>(chain.begin(), chain.end()) ==
        std::multiset<int>(gpus.begin(), gpus.end()));
  for (size_t i = 0; i + 1 < chain.size(); ++i)
    CHECK(!topo.path(chain[i], chain[i + 1]).links.empty());
  bool nearIn = false, nearOther = false;
  for (int gpu : gpus) {
    nearIn = nearIn || topo.path(in, gpu).type <= PathType::kPxb;
    nearOther = nearOther || (gpu != chain.front() && nearAnyNic(topo, gpu));
  }
  if (nearIn) CHECK(topo.path(in, chain.front()).type <= PathType::kPxb);
  if (nearOther) {
    INFO("leaves through GPU " << topo.node(chain.back()).index << ": "
                               << pathTypeName(topo.path(chain.back(), out).type));
    CHECK(topo.path(chain.back(), out).type <= PathType::kPxb);
  }
}

void checkPlan(const Topology& topo) {
  RingPlan plan = searchNetRings(topo);
  std::vector<int> hosts;  // hosts with GPUs, in order
  bool everyHostHasNic = true;
  for (int h = 0; h < static_cast<int>(topo.hosts().size()); ++h) {
    if (topo.nodesOf(NodeKind::kGpu, h).empty()) continue;
    hosts.push_back(h);
    everyHostHasNic = everyHostHasNic && !topo.nodesOf(NodeKind::kNic, h).empty();
  }
  if (hosts.empty() || !everyHostHasNic) {
    CHECK(plan.channels.empty());
    return;
  }
  REQUIRE(!plan.channels.empty());
  std::map<int, int> inUses, outUses;  // NIC index -> channels entering / leaving through it
  double total = 0;
  for (size_t c = 0; c < plan.channels.size(); ++c) {
    const Channel& channel = plan.channels[c];
    INFO(formatChannel(topo, static_cast<int>(c), channel));
    CHECK(channel.type == PathType::kNet);
    ++inUses[channel.rail];
    ++outUses[channel.exitRail];
    // Host by host, in order, each host's GPUs once.
    size_t at = 0;
    for (int h : hosts) {
      size_t count = topo.nodesOf(NodeKind::kGpu, h).size();
      REQUIRE(at + count <= channel.ring.size());
      std::vector<int> chain(channel.ring.begin() + static_cast<long>(at),
                             channel.ring.begin() + static_cast<long>(at + count));
      for (int gpu : chain) CHECK(topo.node(gpu).host == h);
      INFO("host " << h);
      // Rail-aligned: the same NIC indices on every host.
      checkHostPart(topo, chain, nic(topo, channel.rail, h), nic(topo, channel.exitRail, h));
      at += count;
    }
    CHECK(at == channel.ring.size());
    CHECK(channel.bw > 0);
    total += channel.bw;
  }
  CHECK(plan.totalBw == Approx(total));
  // Every NIC that a channel enters through is one that a channel leaves through, as often: no
  // NIC sends for two channels while another idles (crossNic comes in pairs).
  CHECK(inUses == outUses);
}

TEST_CASE("every fixture: rings across hosts visit each GPU once and meet their NICs close by") {
  std::vector<std::string> files = fixtureFiles();
  REQUIRE(files.size() >= 20);
  for (const std::string& file : files) {
    INFO(file);
    Topology topo = loadFixture(file);
    if (topo.hosts().size() > 1) {
      checkPlan(topo);
      continue;
    }
    for (int copies : {2, 3}) {
      INFO(copies << " copies");
      checkPlan(replicateHosts(topo, copies));
    }
  }
}

}  // namespace
}  // namespace tutti::topology::test
