// Ranks whose calls differ, without TUTTI_CHECK_CALLS (thread worlds over shm). Every message
// carries its call's signature, so a rank that receives one of another call fails at once with
// kInvalidUsage naming both calls, and tells the others, which fail with its reason: even where the
// byte counts agree (another type, operation or collective), and with every all-reduce algorithm.
// No rank returns success. TUTTI_TIMEOUT is 60 s: a rank left to time out fails the test by its
// message, not by a clock. Where no message of one call reaches a rank in the other (a tree or
// recursive-doubling all-reduce against a broadcast: the rank that broadcasts waits to receive
// first, and the all-reduce sends it nothing before its end), only TUTTI_CHECK_CALLS=1 can tell.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/warnings.hpp"
#include "tutti/tutti.h"
#include "world.hpp"

using namespace tutti::testing;
using Catch::Matchers::Contains;

namespace {

// What the misbehaving rank calls where the others all-reduce 1024 float32 with sum.
struct Variant {
  const char* name;
  tuttiDataType_t dtype;
  tuttiRedOp_t op;
  size_t count;
  bool broadcast;
  const char* call;  // as the error names it
};

constexpr Variant kBroadcast = {
    "broadcast", tuttiFloat32, tuttiSum, 1024, true, "broadcast(count=1024, float32, root=0)"};
constexpr Variant kVariants[] = {
    {"another type", tuttiInt32, tuttiSum, 1024, false, "allreduce(count=1024, int32, sum)"},
    {"another operation", tuttiFloat32, tuttiMax, 1024, false,
     "allreduce(count=1024, float32, max)"},
    kBroadcast,
    {"another count", tuttiFloat32, tuttiSum, 1025, false, "allreduce(count=1025, float32, sum)"},
};

struct Outcome {
  tuttiResult_t rc;
  std::string error;
};

Outcome call(tuttiComm_t comm, const Variant* variant) {
  std::vector<float> data(1025, 1.0f);
  const tuttiResult_t rc =
      variant && variant->broadcast
          ? tutti_broadcast(data.data(), data.data(), variant->count, variant->dtype, 0, comm,
                            nullptr)
          : tutti_allreduce(data.data(), data.data(), variant ? variant->count : 1024,
                            variant ? variant->dtype : tuttiFloat32,
                            variant ? variant->op : tuttiSum, comm, nullptr);
  return {rc, rc == tuttiSuccess ? "" : tutti_get_last_error()};
}

// Every rank failed with kInvalidUsage naming both calls (`one` and `other`): those that
// received a message of the other call found it themselves; the others, which received nothing of
// it, with the reason of a rank that found it (its departure note: "rank K ... gave up while this
// rank was waiting ...; its error: ...").
void requireMismatchEverywhere(const std::vector<Outcome>& outcomes, const std::string& one,
                               const std::string& other) {
  for (size_t rank = 0; rank < outcomes.size(); ++rank) {
    const Outcome& outcome = outcomes[rank];
    INFO("rank " << rank << ": " << outcome.error);
    CHECK(outcome.rc == tuttiInvalidUsage);
    CHECK_THAT(outcome.error, Contains(one) && Contains(other));
  }
}

}  // namespace

TEST_CASE("calls that differ fail on every rank without TUTTI_CHECK_CALLS", "[ranks][mismatch]") {
  tutti::tests::Warnings().expect();  // the failures are warnings
  ScopedEnv timeout("TUTTI_TIMEOUT", "60");
  const std::string algo = GENERATE("ring", "tree", "oneshot", "doubling");
  ScopedEnv forced("TUTTI_ALGO", algo);
  for (const Variant& variant : kVariants) {
    if ((algo == "tree" || algo == "doubling") && variant.broadcast) continue;  // below
    INFO("TUTTI_ALGO=" << algo << ", rank 2 calls " << variant.call);
    ThreadWorld world(3);
    REQUIRE(world.ok());
    // A first call that matches, so that the mismatch is not the communicator's first message.
    const auto first =
        onEveryRank<Outcome>(3, [&](int rank) { return call(world.comm(rank), nullptr); });
    for (const Outcome& outcome : first) REQUIRE(outcome.rc == tuttiSuccess);
    const auto outcomes = onEveryRank<Outcome>(
        3, [&](int rank) { return call(world.comm(rank), rank == 2 ? &variant : nullptr); });
    requireMismatchEverywhere(outcomes, std::string("rank 2 called ") + variant.call + " as ",
                              "called allreduce(count=1024, float32, sum) as ");
  }
}

TEST_CASE("TUTTI_CHECK_CALLS=1 names calls whose messages never meet", "[ranks][mismatch]") {
  tutti::tests::Warnings().expect();  // the failures are warnings
  ScopedEnv timeout("TUTTI_TIMEOUT", "60");
  ScopedEnv forced("TUTTI_ALGO", GENERATE("tree", "doubling"));
  ScopedEnv checking("TUTTI_CHECK_CALLS", "1");
  ThreadWorld world(3);
  REQUIRE(world.ok());
  const auto outcomes = onEveryRank<Outcome>(
      3, [&](int rank) { return call(world.comm(rank), rank == 2 ? &kBroadcast : nullptr); });
  requireMismatchEverywhere(outcomes, "rank 2 called broadcast(count=1024, float32, root=0) as ",
                            "called allreduce(count=1024, float32, sum) as ");
}

TEST_CASE("a receive that meets a collective fails, naming both", "[ranks][mismatch]") {
  tutti::tests::Warnings().expect();  // the failures are warnings
  ScopedEnv timeout("TUTTI_TIMEOUT", "60");
  ThreadWorld world(2);
  REQUIRE(world.ok());
  const auto outcomes = onEveryRank<Outcome>(2, [&](int rank) {
    if (rank == 0) return call(world.comm(0), nullptr);
    std::vector<float> data(1024);
    const tuttiResult_t rc =
        tutti_recv(data.data(), data.size(), tuttiFloat32, 0, world.comm(1), nullptr);
    return Outcome{rc, rc == tuttiSuccess ? "" : tutti_get_last_error()};
  });
  CHECK(outcomes[1].rc == tuttiInvalidUsage);
  CHECK_THAT(outcomes[1].error,
             Contains("rank 1 called send/recv as call #1; rank 0 called allreduce(count=1024, "
                      "float32, sum) as collective #1"));
  CHECK(outcomes[0].rc != tuttiSuccess);
}

TEST_CASE("a call skipped on one rank fails at the next call that differs", "[ranks][mismatch]") {
  tutti::tests::Warnings().expect();  // the failures are warnings
  ScopedEnv timeout("TUTTI_TIMEOUT", "60");
  const std::string check = GENERATE("0", "1");
  ScopedEnv checking("TUTTI_CHECK_CALLS", check);
  ThreadWorld world(2);
  REQUIRE(world.ok());
  // Rank 1 skips the all-reduce of 1024 elements and goes on to an all-reduce of 512.
  const Variant half{"half", tuttiFloat32, tuttiSum, 512, false, ""};
  const auto outcomes = onEveryRank<Outcome>(2, [&](int rank) {
    const Outcome first = call(world.comm(rank), nullptr);
    if (first.rc != tuttiSuccess) return first;
    if (rank == 0) {
      const Outcome skipped = call(world.comm(0), nullptr);
      if (skipped.rc != tuttiSuccess) return skipped;
    }
    return call(world.comm(rank), &half);
  });
  INFO("TUTTI_CHECK_CALLS=" << check);
  // Checked, both compare every signature; else one receives the other's message and the
  // other learns it from its departure note.
  requireMismatchEverywhere(outcomes, "called allreduce(count=1024, float32, sum) as ",
                            "called allreduce(count=512, float32, sum) as ");
}
