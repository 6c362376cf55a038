// What auto picks with the default tuning table (explainAllReduce: the planner's cost model, then
// direct's own pull decision), pinned at the sizes either side of each threshold, the sizes
// computed from the table's fields so that the test follows a retuned table; and a table with
// other figures moves the picks to its thresholds.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "runtime/collectives/allreduce_choice.hpp"

using namespace tutti::runtime;
using Catch::Matchers::Contains;

namespace {

struct Pick {
  size_t bytes;
  const char* outOfPlace;  // ordinary buffers
  const char* inPlace;
};

std::string picked(const Tuning& tuning, size_t bytes, int ranks, bool sharedMemory, bool inPlace,
                   bool registered = false) {
  return explainAllReduce(tuning, linkModelOf(tuning, sharedMemory),
                          {bytes, ranks, sharedMemory, inPlace, registered})
      .algorithm->name;
}

void checkPicks(const Tuning& tuning, int ranks, bool sharedMemory,
                const std::vector<Pick>& picks) {
  for (const Pick& pick : picks) {
    INFO(ranks << " ranks, " << (sharedMemory ? "shm" : "tcp") << ", " << pick.bytes << " bytes");
    CHECK(picked(tuning, pick.bytes, ranks, sharedMemory, false) == pick.outOfPlace);
    CHECK(picked(tuning, pick.bytes, ranks, sharedMemory, true) == pick.inPlace);
  }
}

}  // namespace

TEST_CASE("the default table's picks either side of each threshold") {
  const Tuning& t = defaultTuning();
  const SizeRange out = t.directPullOutOfPlace, in = t.directPullInPlace;
  // 2 ranks over shm: one-shot up to its limit, the ring up to direct's; then direct where its
  // pull pays (out of place and in place ranges), the ring elsewhere.
  checkPicks(t, 2, true,
             {{8, "oneshot", "oneshot"},
              {t.oneShotMaxBytes, "oneshot", "oneshot"},
              {t.oneShotMaxBytes + 1, "ring", "ring"},
              {t.directMinBytes - 1, "ring", "ring"},
              {t.directMinBytes, "direct", "ring"},
              {out.least, "direct", "ring"},
              {in.least - 1, "direct", "ring"},
              {in.least, "direct", "direct"},
              {out.most, "direct", "direct"},
              {out.most + 1, "ring", "direct"},
              {in.most, "ring", "direct"},
              {in.most + 1, "ring", "ring"},
              {size_t{256} << 20, "ring", "ring"}});
  // 4 ranks: in place never pulls.
  checkPicks(t, 4, true,
             {{8, "oneshot", "oneshot"},
              {t.directMinBytes - 1, "ring", "ring"},
              {out.least, "direct", "ring"},
              {out.most, "direct", "ring"},
              {out.most + 1, "ring", "ring"},
              {in.most, "ring", "ring"}});
  // TCP: no direct; recursive doubling within its measured range (up to one-shot's limit, so
  // one-shot never runs), then the ring.
  const SizeRange doubling = t.tcpDoublingRange;
  REQUIRE(doubling.most == t.tcpOneShotMaxBytes);
  checkPicks(t, 2, false,
             {{8, "doubling", "doubling"},
              {doubling.most, "doubling", "doubling"},
              {doubling.most + 1, "ring", "ring"},
              {out.least, "ring", "ring"},
              {in.most, "ring", "ring"}});
  // Registered outputs: direct pushes from its threshold on, in place or not, any rank count.
  for (const int ranks : {2, 4})
    for (const bool inPlace : {false, true}) {
      CHECK(picked(t, t.directMinBytes - 1, ranks, true, inPlace, true) == "ring");
      CHECK(picked(t, t.directMinBytes, ranks, true, inPlace, true) == "direct");
      CHECK(picked(t, size_t{256} << 20, ranks, true, inPlace, true) == "direct");
    }
  // The other collectives take direct from its threshold over shm (the cost model).
  for (const Collective collective : {Collective::kReduceScatter, Collective::kAllGather}) {
    const LinkModel shm = linkModelOf(t, true);
    CHECK(std::string(
              cheapestAlgorithm(collective, t, t.directMinBytes - 1, RankShape::flat(2), true, shm)
                  .name) == "ring");
    CHECK(std::string(
              cheapestAlgorithm(collective, t, t.directMinBytes, RankShape::flat(2), true, shm)
                  .name) == "direct");
  }
}

TEST_CASE("another table moves the picks to its thresholds") {
  Tuning t = defaultTuning();
  t.oneShotMaxBytes = 1 << 20;
  t.directMinBytes = 2 << 20;
  t.directPullOutOfPlace = {2 << 20, 4 << 20};
  t.directPullInPlace = {8 << 20, 8 << 20};
  checkPicks(t, 2, true,
             {{t.oneShotMaxBytes, "oneshot", "oneshot"},
              {t.oneShotMaxBytes + 1, "ring", "ring"},
              {t.directMinBytes, "direct", "ring"},
              {(4 << 20) + 1, "ring", "ring"},
              {8 << 20, "ring", "direct"},
              {(8 << 20) + 1, "ring", "ring"}});
}

TEST_CASE("the reason names the costs, the thresholds and direct's decision") {
  const Tuning& t = defaultTuning();
  const LinkModel shm = linkModelOf(t, true);
  std::string why = explainAllReduce(t, shm, {8, 2, true, false, false}).why;
  CHECK_THAT(why, Contains("oneshot ") && Contains(" us < ") &&
                      Contains("ruled out: doubling (doubling_range), direct (direct_min_bytes)"));
  why = explainAllReduce(t, shm, {1 << 20, 2, true, false, false}).why;
  CHECK_THAT(why, Contains("ruled out: oneshot (oneshot_max_bytes)") &&
                      Contains("direct pulls out of place: 1M within "
                               "direct_pull_out_of_place 256K..8M"));
  why = explainAllReduce(t, shm, {1 << 20, 2, true, true, false}).why;
  CHECK_THAT(why, Contains("direct does not pull in place (1M outside direct_pull_in_place "
                           "4M..16M): the cheapest of the rest, ring"));
  CHECK_THAT(why, Contains("doubling (doubling_range)"));
  why = explainAllReduce(t, linkModelOf(t, false), {8, 4, false, false, false}).why;
  CHECK_THAT(why, Contains("doubling: measured fastest within tcp_doubling_range 0..64K; then "
                           "oneshot "));
  why = explainAllReduce(t, shm, {8 << 20, 4, true, true, false}).why;
  CHECK_THAT(why, Contains("(in place only with 2 ranks)"));
  why = explainAllReduce(t, linkModelOf(t, false), {1 << 20, 2, false, false, false}).why;
  CHECK_THAT(why, Contains("direct (shared memory only)"));
  const AllReduceChoice unreached =
      explainAllReduce(t, shm, {1 << 20, 2, true, false, false, DirectBuffers::kRegistered});
  CHECK(std::string(unreached.algorithm->name) == "ring");
  CHECK_THAT(unreached.why, Contains("TUTTI_DIRECT_BUFFERS=registered: direct does not reach "
                                     "ordinary buffers: the cheapest of the rest, ring"));
}

TEST_CASE("the ring gives way to the tree where a sweep measured the tree ahead, over its link") {
  Tuning t = defaultTuning();
  t.tcpTreeOverRing = {256 << 10, 512 << 10};
  // Over TCP: the tree inside the range, the ring either side (the cost model prices the tree
  // above the ring for 4 ranks at every size); direct's fallback there is the tree too.
  checkPicks(t, 4, false,
             {{(256 << 10) - 1, "ring", "ring"},
              {256 << 10, "tree", "tree"},
              {512 << 10, "tree", "tree"},
              {(512 << 10) + 1, "ring", "ring"}});
  const std::string why =
      explainAllReduce(t, linkModelOf(t, false), {512 << 10, 4, false, false, false}).why;
  CHECK_THAT(why, Contains("ring (tcp_tree_over_ring)"));
  // Over shared memory the TCP range says nothing; its own range does the same there, where the
  // direct algorithms' fallback then runs the tree.
  checkPicks(t, 4, true, {{384 << 10, "direct", "ring"}});
  t.treeOverRing = {384 << 10, 384 << 10};
  checkPicks(t, 4, true, {{384 << 10, "direct", "tree"}});
  // 0..0 is nowhere: an empty all-reduce keeps its pick.
  t.treeOverRing = {0, 0};
  CHECK(picked(t, 0, 4, true, false) == picked(defaultTuning(), 0, 4, true, false));
}

TEST_CASE("recursive doubling runs where a sweep measured it ahead, over its link, nowhere else") {
  Tuning t = defaultTuning();
  t.doublingRange = {1 << 10, 16 << 10};
  // Over shared memory: doubling inside the range, whatever the cost model prices one-shot at;
  // the model's pick either side (one-shot below, the ring above for 4 ranks).
  checkPicks(t, 4, true,
             {{(1 << 10) - 1, "oneshot", "oneshot"},
              {1 << 10, "doubling", "doubling"},
              {16 << 10, "doubling", "doubling"},
              {(16 << 10) + 1, "ring", "ring"}});
  // Over TCP only the TCP range counts; 0..0 is nowhere, even for an empty all-reduce.
  t.tcpDoublingRange = {0, 0};
  checkPicks(t, 4, false, {{0, "oneshot", "oneshot"}, {4 << 10, "oneshot", "oneshot"}});
  t.tcpDoublingRange = {4 << 10, 4 << 10};
  checkPicks(t, 4, false, {{4 << 10, "doubling", "doubling"}, {8 << 10, "oneshot", "oneshot"}});
  CHECK_THAT(explainAllReduce(t, linkModelOf(t, false), {8 << 10, 4, false, false, false}).why,
             Contains("doubling (tcp_doubling_range)"));
}
