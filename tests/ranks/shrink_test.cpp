// tutti_comm_shrink within one process (ranks as threads): what it refuses, how the survivors are
// renumbered when a live rank is excluded, and a shrink that some ranks never call. The killed-
// rank scenarios are tests/faults/shrink.py, with real processes.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/warnings.hpp"
#include "tutti/tutti.hpp"
#include "world.hpp"

using namespace tutti::testing;
using Catch::Matchers::Contains;

namespace {

// What one call of tutti_comm_shrink on rank 0 of a 4-rank world says.
std::string refusal(tuttiComm_t comm, const std::vector<int>& excluded, int flags = 0,
                    bool nullOut = false) {
  tuttiComm_t child = nullptr;
  const tuttiResult_t result =
      tutti_comm_shrink(comm, excluded.empty() ? nullptr : excluded.data(),
                        static_cast<int>(excluded.size()), nullOut ? nullptr : &child, flags);
  CHECK(result == tuttiInvalidArgument);
  CHECK(child == nullptr);
  return tutti_get_last_error();
}

}  // namespace

TEST_CASE("shrink refuses bad exclusions, naming what is wrong, and changes nothing",
          "[shrink][bad-input]") {
  ThreadWorld world(4);
  REQUIRE(world.ok());
  tuttiComm_t comm = world.comm(0);
  CHECK_THAT(refusal(comm, {4}), Contains("rank 0: exclude_ranks names rank 4, out of range"));
  CHECK_THAT(refusal(comm, {-1}), Contains("names rank -1, out of range [0, 4)"));
  CHECK_THAT(refusal(comm, {2, 1, 2}), Contains("names rank 2 twice"));
  CHECK_THAT(refusal(comm, {3, 0}), Contains("names this rank itself"));
  CHECK_THAT(refusal(comm, {0, 1, 2, 3}), Contains("names all 4 ranks: nobody would be left"));
  CHECK_THAT(refusal(comm, {1}, 0, true), Contains("newcomm is NULL"));
  CHECK_THAT(refusal(comm, {1}, 6), Contains("flags 0x6 hold unknown bits"));
  CHECK(tutti_comm_shrink(comm, nullptr, 2, nullptr, 0) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("newcomm is NULL"));
  tuttiComm_t child = nullptr;
  CHECK(tutti_comm_shrink(comm, nullptr, 2, &child, 0) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("exclude_ranks is NULL with exclude_count 2"));
  const int one = 1;
  CHECK(tutti_comm_shrink(comm, &one, 5, &child, 0) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("exclude_count 5 is out of range [0, 4]"));
  CHECK(tutti_comm_shrink(comm, &one, -1, &child, 0) == tuttiInvalidArgument);
  CHECK(tutti_comm_shrink(nullptr, &one, 1, &child, 0) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("the communicator is NULL"));

  // Nothing was agreed or retired: the world still all-reduces.
  const auto sums = onEveryRank<int32_t>(4, [&](int rank) {
    int32_t value = rank + 1, total = -1;
    tutti_allreduce(&value, &total, 1, tuttiInt32, tuttiSum, world.comm(rank), nullptr);
    return total;
  });
  CHECK(sums == std::vector<int32_t>(4, 10));
}

TEST_CASE("excluding a live rank renumbers the others in order, even where only one names it",
          "[shrink][cpp]") {
  tutti::tests::Warnings().expect();  // the shrunk world's refusals are warnings
  auto comms = tutti::Comm::world(4);
  struct Outcome {
    int rank = -1, size = -1;
    int64_t sum = -1;
    std::string old;  // what the shrunk communicator says afterwards
  };
  const auto outcomes = onEveryRank<Outcome>(4, [&](int rank) {
    Outcome outcome;
    if (rank == 1) return outcome;  // excluded: it does not call shrink
    try {
      // Rank 0 names rank 1; the others name nobody and find nobody dead: all agree on the union.
      tutti::Comm child =
          rank == 0 ? comms[0].shrink({1}) : comms[rank].shrink({}, TUTTI_SHRINK_DEAD);
      outcome.rank = child.rank();
      outcome.size = child.size();
      const int64_t value = int64_t{1} << (10 * rank);
      child.allreduce(&value, &outcome.sum, 1, tuttiSum);
      comms[rank].barrier();
    } catch (const tutti::CommError& error) {
      outcome.old = error.what();
    }
    return outcome;
  });
  const int64_t expected = (int64_t{1} << 0) + (int64_t{1} << 20) + (int64_t{1} << 30);
  const int newRanks[] = {0, -1, 1, 2};
  for (int rank : {0, 2, 3}) {
    const Outcome& outcome = outcomes[static_cast<size_t>(rank)];
    INFO("rank " << rank);
    CHECK(outcome.rank == newRanks[rank]);
    CHECK(outcome.size == 3);
    CHECK(outcome.sum == expected);
    CHECK_THAT(outcome.old, Contains("this communicator was shrunk (tutti_comm_shrink excluded "
                                     "ranks 1) into one of 3 ranks"));
  }
  // A second shrink of the shrunk communicator is refused alike.
  tuttiComm_t again = nullptr;
  CHECK(tutti_comm_shrink(comms[0].handle(), nullptr, 0, &again, 0) == tuttiInvalidUsage);
  CHECK_THAT(tutti_get_last_error(), Contains("was shrunk"));
}

TEST_CASE("callers that name different ranks agree on the union", "[shrink]") {
  ThreadWorld world(4);
  REQUIRE(world.ok());
  // Rank 0 names rank 2, rank 1 names rank 3: neither can finish alone, each waiting for the rank
  // it did not name, until it reads the other's proposal.
  const auto sizes = onEveryRank<int>(4, [&](int rank) {
    if (rank >= 2) return -1;
    tutti_comm_set_timeout(world.comm(rank), 5000);
    const int excluded = rank == 0 ? 2 : 3;
    tuttiComm_t child = nullptr;
    if (tutti_comm_shrink(world.comm(rank), &excluded, 1, &child, 0) != tuttiSuccess) return -2;
    int size = 0;
    tutti_comm_size(child, &size);
    int32_t value = rank + 1, total = 0;
    if (tutti_allreduce(&value, &total, 1, tuttiInt32, tuttiSum, child, nullptr) != tuttiSuccess ||
        total != 3)
      size = -3;
    tutti_comm_destroy(child);
    return size;
  });
  CHECK(sizes[0] == 2);
  CHECK(sizes[1] == 2);
}

TEST_CASE("a shrink some ranks never call times out on the callers, naming the others",
          "[shrink][timeout]") {
  tutti::tests::Warnings().expect();  // the timeouts are warnings
  ThreadWorld world(4);
  REQUIRE(world.ok());
  const auto messages = onEveryRank<std::string>(4, [&](int rank) {
    if (rank >= 2) return std::string();
    tutti_comm_set_timeout(world.comm(rank), 300);
    tuttiComm_t child = nullptr;
    if (tutti_comm_shrink(world.comm(rank), nullptr, 0, &child, TUTTI_SHRINK_DEAD) != tuttiTimeout)
      return std::string("no timeout");
    return std::string(tutti_get_last_error());
  });
  for (int rank : {0, 1}) {
    INFO("rank " << rank);
    CHECK_THAT(messages[static_cast<size_t>(rank)],
               Contains("shrink timed out: ranks 2 3 neither called tutti_comm_shrink"));
  }
}
