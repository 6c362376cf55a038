// The planner's choice by size (cheapestAlgorithm, runtime/collectives/algorithms.cpp): for every
// collective, 2 to 64 ranks (worldSizes()), shm and TCP links (and slower or faster shm rings, as
// the topology may estimate), the algorithm picked for growing sizes applies to that size and, once
// left, is never picked again (the costs are lines in the size: each algorithm wins one interval);
// all-reduce moves from the latency algorithms (one-shot, tree) to the bandwidth ones (ring,
// direct) in that order, starting with one-shot and ending with the ring over TCP and direct over
// shm.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "runtime/collectives/algorithm.hpp"
#include "runtime/collectives/pick_memo.hpp"

using namespace tutti::runtime;

namespace {

constexpr Collective kCollectives[] = {Collective::kAllReduce, Collective::kReduceScatter,
                                       Collective::kAllGather, Collective::kBroadcast,
                                       Collective::kReduce,    Collective::kAllToAll};

struct Links {
  const char* name;
  bool sharedMemory;
  LinkModel model;
};

std::vector<Links> linkCases() {
  const LinkModel shm = linkModelOf(defaultTuning(), true);
  std::vector<Links> cases = {{"shm", true, shm},
                              {"tcp", false, linkModelOf(defaultTuning(), false)}};
  for (const double gbs : {0.5, 20.0, 100.0})
    cases.push_back({"shm ring estimate", true, {shm.alphaUs, 1.0 / (gbs * 1000)}});
  return cases;
}

// 2 to 16 ranks, then the world sizes around powers of two to 64: past 16 the costs move smoothly
// with n but for the trees' depth, which steps at powers of two. Every world size costs about
// 70,000 choices, seconds under ASan.
std::vector<int> worldSizes() {
  std::vector<int> sizes;
  for (int n = 2; n <= 16; ++n) sizes.push_back(n);
  for (const int n : {17, 24, 31, 32, 33, 48, 63, 64}) sizes.push_back(n);
  return sizes;
}

// Sizes from 1 byte to 1 GiB: powers of two, their neighbours, and random ones (fixed seed).
std::vector<size_t> growingSizes() {
  std::vector<size_t> sizes;
  for (size_t power = 1; power <= (size_t{1} << 30); power <<= 1)
    for (const size_t size : {power - 1, power, power + 1, power + power / 2})
      if (size > 0) sizes.push_back(size);
  std::mt19937_64 rng(20261201);
  for (int i = 0; i < 500; ++i) sizes.push_back(1 + rng() % (size_t{1} << 30));
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

}  // namespace

// Millions of choices: each check only notes what is wrong, so that a passing run costs no Catch
// assertion per choice (about 3 minutes under ASan otherwise); a failing one lists every case.
TEST_CASE("the planner's choice applies and never returns to an algorithm it left") {
  const std::vector<size_t> sizes = growingSizes();
  const Tuning& table = defaultTuning();
  std::vector<std::string> wrong;
  for (const Collective collective : kCollectives)
    for (const int n : worldSizes())
      for (const Links& links : linkCases()) {
        const RankShape shape = RankShape::flat(n);  // builds both trees: once, not per choice
        std::map<std::string, bool> left;
        std::string current;
        for (const size_t bytes : sizes) {
          const Algorithm& picked =
              cheapestAlgorithm(collective, table, bytes, shape, links.sharedMemory, links.model);
          const auto note = [&](const char* what) {
            wrong.push_back(std::string(collectiveName(collective)) + ", " + std::to_string(n) +
                            " ranks over " + links.name + ", " + std::to_string(bytes) +
                            " bytes: " + picked.name + " " + what);
          };
          if (picked.collective != collective) note("is another collective's");
          if (const auto maxBytes = picked.maxBytesOf(links.sharedMemory);
              maxBytes && bytes > table.*maxBytes)
            note("is past its largest size");
          if (picked.minBytes && bytes < table.*picked.minBytes) note("is below its smallest size");
          if (picked.sharedMemoryOnly && !links.sharedMemory) note("needs shared memory");
          if (picked.name == current) continue;
          if (left[picked.name]) note("was left at a smaller size");
          if (!current.empty()) left[current] = true;
          current = picked.name;
        }
      }
  INFO((wrong.empty() ? std::string() : wrong.front()) << " (" << wrong.size() << " wrong)");
  CHECK(wrong.empty());
}

TEST_CASE("all-reduce goes from one-shot through the tree to the ring and direct as sizes grow") {
  // The latency algorithms first (recursive doubling over TCP within the default table's measured
  // range; one step; log2(n) steps), then the bandwidth ones (the ring's bytes cross each rank
  // 2(n-1)/n times, the tree's twice; direct reads each byte once).
  const std::vector<std::string> order = {"doubling", "oneshot", "tree", "ring", "direct"};
  const std::vector<size_t> sizes = growingSizes();
  for (const int n : worldSizes())
    for (const Links& links : linkCases()) {
      INFO(n << " ranks over " << links.name);
      const RankShape shape = RankShape::flat(n);
      size_t reached = 0;
      std::string outOfOrder;  // the first size whose choice is not in the order, or goes back
      for (const size_t bytes : sizes) {
        const std::string picked = cheapestAlgorithm(Collective::kAllReduce, defaultTuning(), bytes,
                                                     shape, links.sharedMemory, links.model)
                                       .name;
        const auto at =
            static_cast<size_t>(std::find(order.begin(), order.end(), picked) - order.begin());
        if ((at >= order.size() || at < reached) && outOfOrder.empty())
          outOfOrder = std::to_string(bytes) + " bytes: " + picked;
        reached = std::max(reached, at);
      }
      CHECK(outOfOrder == "");
      // The smallest messages take one-shot (recursive doubling over TCP); the largest (past
      // where the ring's 2(n-1) steps cost less than the tree's extra bytes, about 100 MB for 64
      // ranks) a bandwidth algorithm.
      CHECK(std::string(cheapestAlgorithm(Collective::kAllReduce, defaultTuning(), 8, shape,
                                          links.sharedMemory, links.model)
                            .name) == (links.sharedMemory ? "oneshot" : "doubling"));
      const std::string largest =
          cheapestAlgorithm(Collective::kAllReduce, defaultTuning(), size_t{4} << 30, shape,
                            links.sharedMemory, links.model)
              .name;
      CHECK(largest == (links.sharedMemory ? "direct" : "ring"));
    }
}

TEST_CASE("direct's own fallback skips it: the cheapest of the rest") {
  for (const size_t bytes : {size_t{1} << 20, size_t{1} << 30})
    CHECK(std::string(cheapestAlgorithm(Collective::kAllReduce, defaultTuning(), bytes,
                                        RankShape::flat(4), true,
                                        linkModelOf(defaultTuning(), true), "direct")
                          .name) == "ring");
}

// Across hosts the tree is the hosts' binary tree with a chain inside each host, deeper than a
// binary tree over the ranks: its latency is priced by the communicator's trees' depth.
TEST_CASE("the tree all-reduce's latency counts the trees' depth, not log2 of the ranks") {
  const Algorithm* tree = nullptr;
  for (const Algorithm& algorithm : algorithms())
    if (algorithm.collective == Collective::kAllReduce && std::string(algorithm.name) == "tree")
      tree = &algorithm;
  REQUIRE(tree);
  const LinkModel tcp = linkModelOf(defaultTuning(), false);
  CHECK(RankShape::flat(16).treeDepth == 4);
  CHECK(RankShape::flat(17).treeDepth == 5);
  CHECK(RankShape::flat(1).treeDepth == 0);
  // 4 hosts of 8 ranks: depth 2 across hosts + a chain of 7.
  const RankShape acrossHosts{32, 9};
  for (const size_t bytes : {size_t{8}, size_t{1} << 20}) {
    const double flat =
        assess(*tree, defaultTuning(), bytes, RankShape::flat(32), false, tcp).costUs;
    const double deep = assess(*tree, defaultTuning(), bytes, acrossHosts, false, tcp).costUs;
    CHECK(deep - flat == Approx(2.0 * (9 - 5) * tcp.alphaUs));
  }
}

TEST_CASE("the pick memo answers only for the size and collective its pick was made for") {
  const Algorithm& one = algorithms()[0];
  const Algorithm& other = algorithms()[1];
  PickMemo memo;
  for (const Collective collective : kCollectives) CHECK(memo.find(collective, 0) == nullptr);
  memo.remember(Collective::kAllReduce, 4096, one);
  memo.remember(Collective::kAllGather, 4096, other);
  CHECK(memo.find(Collective::kAllReduce, 4096) == &one);
  CHECK(memo.find(Collective::kAllGather, 4096) == &other);
  CHECK(memo.find(Collective::kAllReduce, 4097) == nullptr);
  CHECK(memo.find(Collective::kReduceScatter, 4096) == nullptr);
  // A new size replaces the collective's pick; the others keep theirs.
  memo.remember(Collective::kAllReduce, 8, other);
  CHECK(memo.find(Collective::kAllReduce, 4096) == nullptr);
  CHECK(memo.find(Collective::kAllReduce, 8) == &other);
  CHECK(memo.find(Collective::kAllGather, 4096) == &other);
}
