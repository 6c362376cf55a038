// tutti_comm_grow within one process (ranks and newcomers as threads): newcomers join after the
// members, who keep their ranks; a shrunk communicator grows back; what is refused.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/warnings.hpp"
#include "tutti/tutti.hpp"
#include "world.hpp"

using namespace tutti::testing;
using Catch::Matchers::Contains;

namespace {

struct Joined {
  int rank = -1, size = -1;
  int64_t sum = -1;
  std::string error;
};

// Who this rank is in the grown communicator, and the sum of 2^(10 rank) over it: who took part.
Joined allReduceOn(tuttiComm_t comm) {
  Joined joined;
  tutti_comm_rank(comm, &joined.rank);
  tutti_comm_size(comm, &joined.size);
  const int64_t value = int64_t{1} << (10 * joined.rank);
  if (tutti_allreduce(&value, &joined.sum, 1, tuttiInt64, tuttiSum, comm, nullptr) != tuttiSuccess)
    joined.error = tutti_get_last_error();
  return joined;
}

int64_t sumOfRanks(int n) {
  int64_t sum = 0;
  for (int rank = 0; rank < n; ++rank) sum += int64_t{1} << (10 * rank);
  return sum;
}

}  // namespace

TEST_CASE("newcomers join after the members, who keep their ranks", "[grow]") {
  ThreadWorld world(3);
  REQUIRE(world.ok());
  tuttiUniqueId token;
  REQUIRE(tutti_comm_grow_id(world.comm(1), &token) == tuttiSuccess);
  const auto joined = onEveryRank<Joined>(5, [&](int rank) {
    tuttiComm_t grown = nullptr;
    const tuttiResult_t rc = rank < 3 ? tutti_comm_grow(world.comm(rank), 5, nullptr, -1, &grown)
                                      : tutti_comm_grow(nullptr, 5, &token, rank, &grown);
    if (rc != tuttiSuccess) return Joined{-1, -1, -1, tutti_get_last_error()};
    const Joined result = allReduceOn(grown);
    tutti_comm_destroy(grown);
    return result;
  });
  for (int rank = 0; rank < 5; ++rank) {
    INFO("rank " << rank << ": " << joined[static_cast<size_t>(rank)].error);
    CHECK(joined[static_cast<size_t>(rank)].rank == rank);
    CHECK(joined[static_cast<size_t>(rank)].size == 5);
    CHECK(joined[static_cast<size_t>(rank)].sum == sumOfRanks(5));
  }
  // The communicator grown from stays as it was.
  const auto sums = onEveryRank<int64_t>(3, [&](int rank) {
    int64_t value = int64_t{1} << (10 * rank), total = -1;
    tutti_allreduce(&value, &total, 1, tuttiInt64, tuttiSum, world.comm(rank), nullptr);
    return total;
  });
  CHECK(sums == std::vector<int64_t>(3, sumOfRanks(3)));
}

TEST_CASE("a shrunk communicator grows back to its size with a newcomer", "[grow][shrink][cpp]") {
  auto world = tutti::Comm::world(4);
  tuttiUniqueId token{};
  std::vector<tutti::Comm> survivors(3);
  // Rank 1 leaves; the others shrink to 3 and grow back to 4 with a newcomer as rank 3.
  onEveryRank<int>(3, [&](int index) {
    const int rank = index == 0 ? 0 : index + 1;
    survivors[static_cast<size_t>(index)] = world[static_cast<size_t>(rank)].shrink({1});
    return 0;
  });
  token = survivors[0].growId();
  const auto joined = onEveryRank<Joined>(4, [&](int rank) {
    try {
      tutti::Comm grown = rank < 3 ? survivors[static_cast<size_t>(rank)].grow(4)
                                   : tutti::Comm::joinGrowing(token, 3, 4);
      return allReduceOn(grown.handle());
    } catch (const tutti::CommError& error) {
      return Joined{-1, -1, -1, error.what()};
    }
  });
  for (int rank = 0; rank < 4; ++rank) {
    INFO("rank " << rank << ": " << joined[static_cast<size_t>(rank)].error);
    CHECK(joined[static_cast<size_t>(rank)].rank == rank);
    CHECK(joined[static_cast<size_t>(rank)].sum == sumOfRanks(4));
  }
}

TEST_CASE("grow refuses what cannot be grown, naming why", "[grow][bad-input]") {
  tutti::tests::Warnings().expect();  // the newcomer's refusals after reaching the store
  ThreadWorld world(2);
  REQUIRE(world.ok());
  tuttiComm_t grown = nullptr;
  CHECK(tutti_comm_grow(world.comm(0), 2, nullptr, -1, &grown) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(),
             Contains("new_size 2 is not larger than the communicator's 2 ranks"));
  CHECK(tutti_comm_grow(world.comm(0), 3, nullptr, -1, nullptr) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("newcomm is NULL"));
  CHECK(tutti_comm_grow(nullptr, 3, nullptr, 2, &grown) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("id is NULL: a newcomer"));
  tuttiUniqueId plain;
  REQUIRE(tutti_get_unique_id(&plain) == tuttiSuccess);
  CHECK(tutti_comm_grow(nullptr, 3, &plain, 2, &grown) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("the id is not a grow token"));
  tuttiUniqueId token;
  REQUIRE(tutti_comm_grow_id(world.comm(0), &token) == tuttiSuccess);
  CHECK(tutti_comm_grow(nullptr, 3, &token, 1, &grown) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(),
             Contains("rank 1: not a newcomer's rank: the communicator to grow has 2 ranks, so "
                      "newcomers to a communicator of 3 are ranks 2..2"));
  CHECK(tutti_comm_grow(nullptr, 3, &token, 3, &grown) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("rank 3 is out of range [0, 3)"));
  CHECK(tutti_comm_grow_id(world.comm(0), nullptr) == tuttiInvalidArgument);
  CHECK(grown == nullptr);
  // Refusals change nothing: the members still all-reduce.
  const auto after =
      onEveryRank<Joined>(2, [&](int rank) { return allReduceOn(world.comm(rank)); });
  for (const Joined& member : after) {
    INFO(member.error);
    CHECK(member.sum == sumOfRanks(2));
  }
}

TEST_CASE("members and a newcomer that disagree on the size fail, naming both values",
          "[grow][bad-input]") {
  tutti::tests::Warnings().expect();  // the failures are warnings
  ThreadWorld world(2);
  REQUIRE(world.ok());
  tuttiUniqueId token;
  REQUIRE(tutti_comm_grow_id(world.comm(0), &token) == tuttiSuccess);
  // The newcomer waits for a rank 3 that never comes: its own timeout ends it.
  ScopedEnv timeout("TUTTI_TIMEOUT", "2");
  const auto errors = onEveryRank<std::string>(3, [&](int rank) {
    tuttiComm_t grown = nullptr;
    if (rank < 2) tutti_comm_set_timeout(world.comm(rank), 2000);
    const tuttiResult_t rc = rank < 2 ? tutti_comm_grow(world.comm(rank), 3, nullptr, -1, &grown)
                                      : tutti_comm_grow(nullptr, 4, &token, 2, &grown);
    if (rc == tuttiSuccess) tutti_comm_destroy(grown);
    return rc == tuttiSuccess ? std::string("grew") : std::string(tutti_get_last_error());
  });
  for (int rank : {0, 1})
    CHECK_THAT(errors[static_cast<size_t>(rank)],
               Contains("the ranks disagree on the grown size: rank 2 says 4, rank " +
                        std::to_string(rank) + " says 3"));
  CHECK_THAT(errors[2], Contains("rank 3 never contributed"));
}
