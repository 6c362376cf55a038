// Every collective, with worlds of 1..8 ranks as threads, over each transport and each all-reduce
// algorithm: seeded random types, operations, counts and roots, in-place and out-of-place,
// blocking and asynchronous, checked element by element against the independent reference, with
// all-reduce outputs bitwise equal across ranks.
#include <catch2/catch.hpp>

#include "collective_check.hpp"
#include "world.hpp"

using namespace tutti::testing;

namespace {

void runRandomCases(int nranks, const std::string& transport, const std::string& algo,
                    int casesPerKind, size_t maxBytes, uint64_t seed) {
  ScopedEnv forceTransport("TUTTI_TRANSPORT", transport);
  ScopedEnv forceAlgo("TUTTI_ALGO", algo);
  ScopedEnv timeout("TUTTI_TIMEOUT", "60");
  ThreadWorld world(nranks);
  INFO("world of " << nranks << " over " << transport << ", algo " << algo);
  REQUIRE(world.ok());
  std::mt19937_64 rng(seed);
  std::vector<Case> cases;
  for (int i = 0; i < casesPerKind; ++i)
    for (Kind kind : kAllKinds) cases.push_back(randomCase(rng, kind, nranks, maxBytes));
  for (const Case& c : cases) {
    std::vector<std::vector<char>> outputs(static_cast<size_t>(nranks));
    const auto problems = onEveryRank<std::string>(nranks, [&](int rank) {
      return runCase(world.comm(rank), c, &outputs[static_cast<size_t>(rank)]);
    });
    for (const std::string& problem : problems) CHECK(problem == "");
    if (c.kind == Kind::kAllReduce)
      for (int rank = 1; rank < nranks; ++rank)
        CHECK(outputs[static_cast<size_t>(rank)] == outputs[0]);
  }
}

}  // namespace

TEST_CASE("collectives over shm with every algorithm", "[ranks][shm]") {
  const int nranks = GENERATE(1, 2, 3, 4, 5, 8);
  const std::string algo = GENERATE("ring", "tree", "oneshot", "auto");
  runRandomCases(nranks, "shm", algo, 3, 256 << 10, 1000 + static_cast<uint64_t>(nranks));
}

TEST_CASE("collectives over tcp with every algorithm", "[ranks][tcp]") {
  const int nranks = GENERATE(2, 3, 4, 5, 8);
  const std::string algo = GENERATE("ring", "tree", "oneshot", "auto");
  runRandomCases(nranks, "tcp", algo, 2, 256 << 10, 2000 + static_cast<uint64_t>(nranks));
}

TEST_CASE("large all-reduce pipelines through many sections", "[ranks][large]") {
  const std::string transport = GENERATE("shm", "tcp");
  const std::string algo = GENERATE("ring", "tree");
  ScopedEnv forceTransport("TUTTI_TRANSPORT", transport);
  ScopedEnv forceAlgo("TUTTI_ALGO", algo);
  const int nranks = 3;
  ThreadWorld world(nranks);
  REQUIRE(world.ok());
  // 16 MiB of float32 per rank, a prime element count.
  const Case c{Kind::kAllReduce, tuttiFloat32, tuttiSum, 4194301, 0, false, false, 77};
  const auto problems = onEveryRank<std::string>(
      nranks, [&](int rank) { return runCase(world.comm(rank), c, nullptr); });
  for (const std::string& problem : problems) CHECK(problem == "");
}

TEST_CASE("tiny FIFOs do not deadlock any algorithm", "[ranks][slots]") {
  ScopedEnv slots("TUTTI_SLOTS", "2");
  ScopedEnv chunk("TUTTI_CHUNK_BYTES", "4096");
  const std::string algo = GENERATE("ring", "tree", "oneshot");
  runRandomCases(GENERATE(4, 5), "shm", algo, 2, 64 << 10, 3000);
}
