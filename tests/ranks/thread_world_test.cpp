// Every collective, with worlds of 1..8 ranks as threads, over each transport and each all-reduce
// algorithm, and over scrambled ring orders (TUTTI_RING_ORDER, in worlds and split communicators):
// seeded random types, operations, counts and roots, in-place and out-of-place, blocking and
// asynchronous, checked element by element against the independent reference, with all-reduce
// outputs bitwise equal across ranks. The direct all-reduce, reduce-scatter and allgather reach
// every rank's buffers in place, and hand over to another algorithm when TUTTI_DIRECT_BUFFERS
// keeps them to tutti_mem_alloc memory and one rank's buffers are not (the trace says which ran). A
// rank that stays out of a collective shows which ring the others follow: the rank after it times
// out waiting for it.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <latch>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "collective_check.hpp"
#include "in_process_transport.hpp"
#include "runtime/collectives/autotune.hpp"
#include "tests/warnings.hpp"
#include "tutti/tutti.hpp"
#include "world.hpp"

using namespace tutti::testing;
using Catch::Matchers::Contains;

namespace {

// Seeded random cases of every kind on the n communicators commOf(0..n-1), one thread each.
void runCases(int nranks, const std::function<tuttiComm_t(int)>& commOf, int casesPerKind,
              size_t maxBytes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Case> cases;
  for (int i = 0; i < casesPerKind; ++i)
    for (Kind kind : kAllKinds) cases.push_back(randomCase(rng, kind, nranks, maxBytes));
  for (const Case& c : cases) {
    std::vector<std::vector<char>> outputs(static_cast<size_t>(nranks));
    const auto problems = onEveryRank<std::string>(nranks, [&](int rank) {
      return runCase(commOf(rank), c, &outputs[static_cast<size_t>(rank)]);
    });
    for (const std::string& problem : problems) CHECK(problem == "");
    if (c.kind == Kind::kAllReduce)
      for (int rank = 1; rank < nranks; ++rank)
        CHECK(outputs[static_cast<size_t>(rank)] == outputs[0]);
  }
}

void runRandomCases(int nranks, const std::string& transport, const std::string& algo,
                    int casesPerKind, size_t maxBytes, uint64_t seed) {
  ScopedEnv forceTransport("TUTTI_TRANSPORT", transport);
  ScopedEnv forceAlgo("TUTTI_ALGO", algo);
  ScopedEnv timeout("TUTTI_TIMEOUT", "60");
  ThreadWorld world(nranks);
  INFO("world of " << nranks << " over " << transport << ", algo " << algo);
  REQUIRE(world.ok());
  runCases(
      nranks, [&](int rank) { return world.comm(rank); }, casesPerKind, maxBytes, seed);
}

// A seeded random order of n ranks as TUTTI_RING_ORDER ("2,0,3,1"). From 3 ranks on it is not a
// rotation of rank order, so some rank's neighbours differ from rank order's; 2 ranks have one
// ring, "1,0" moves them to each other's positions.
std::string scrambledRing(int n, uint64_t seed) {
  std::vector<int> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  auto rotationOfRankOrder = [&] {
    for (int i = 0; i < n; ++i)
      if (order[static_cast<size_t>((i + 1) % n)] != (order[static_cast<size_t>(i)] + 1) % n)
        return false;
    return true;
  };
  std::mt19937_64 rng(seed);
  if (n == 2) std::swap(order[0], order[1]);
  while (n >= 3 && rotationOfRankOrder()) std::shuffle(order.begin(), order.end(), rng);
  std::ostringstream text;
  for (size_t i = 0; i < order.size(); ++i) text << (i > 0 ? "," : "") << order[i];
  return text.str();
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

// Recursive doubling in worlds of 3 to 8 (one to three rounds; extra ranks folded in where the
// size is not a power of two), over both transports; tiny FIFOs below.
TEST_CASE("collectives with recursive doubling", "[ranks][doubling]") {
  const auto [transport, nranks] =
      GENERATE(std::pair{"shm", 3}, std::pair{"shm", 8}, std::pair{"tcp", 4}, std::pair{"tcp", 5});
  runRandomCases(nranks, transport, "doubling", 2, 256 << 10, 5000 + static_cast<uint64_t>(nranks));
}

TEST_CASE("collectives over a transport registered with one line", "[ranks][registry]") {
  registerInProcessTransport();
  const uint64_t before = inProcessMessages();
  const int nranks = GENERATE(2, 3, 4);
  runRandomCases(nranks, "in-process", "auto", 2, 64 << 10, 3000 + static_cast<uint64_t>(nranks));
  // The data went over it, not over a transport the runtime knows by name.
  CHECK(inProcessMessages() > before);
}

namespace {

// Each transport, and ucx over UCX's tcp and its shared memory (UCX_TLS).
std::vector<std::pair<const char*, const char*>> everyTransport() {
  std::vector<std::pair<const char*, const char*>> transports{{"shm", ""}, {"tcp", ""}};
#ifdef TUTTI_HAVE_UCX
  transports.insert(transports.end(), {{"ucx", "tcp"}, {"ucx", "posix,sysv,cma,self"}});
#endif
  return transports;
}

}  // namespace

// A rank that waits for a late peer sleeps on what its transports signal (shm: the FIFO's doorbell;
// tcp: its sockets; ucx: the worker's event descriptor, armed before each sleep) instead of
// spinning a core away from the job's own threads. The bound is loose: a spinning wait takes
// most of a core (ucx did, its worker armed only once), a sleeping one a small share.
TEST_CASE("a rank waiting for a late peer sleeps", "[ranks][sleep]") {
  const auto [transport, ucxTls] = GENERATE(from_range(everyTransport()));
  INFO(transport << (*ucxTls ? " with UCX_TLS=" : "") << ucxTls);
  ScopedEnv forceTransport("TUTTI_TRANSPORT", transport);
  std::optional<ScopedEnv> tls;
  if (*ucxTls) tls.emplace("UCX_TLS", ucxTls);
  ScopedEnv quiet("UCX_WARN_UNUSED_ENV_VARS", "n");
  ThreadWorld world(2);
  REQUIRE(world.ok());
  const auto cpuSeconds = [] {
    timespec now{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
  };
  const auto allreduce = [&](int rank) {
    float data[16] = {};
    return tutti_allreduce(data, data, 16, tuttiFloat32, tuttiSum, world.comm(rank), nullptr) ==
                   tuttiSuccess
               ? std::string()
               : std::string(tutti_get_last_error());
  };
  // Calls before the wait leave events behind (ucx: its descriptor stays readable until re-armed).
  for (const std::string& problem : onEveryRank<std::string>(2, allreduce)) REQUIRE(problem == "");
  const auto wallStart = std::chrono::steady_clock::now();
  const double cpuStart = cpuSeconds();
  const auto problems = onEveryRank<std::string>(2, [&](int rank) {
    if (rank == 1) std::this_thread::sleep_for(std::chrono::seconds(1));
    return allreduce(rank);
  });
  const double cpu = cpuSeconds() - cpuStart;
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wallStart).count();
  for (const std::string& problem : problems) CHECK(problem == "");
  INFO("CPU " << cpu << " s in " << wall << " s");
  CHECK(cpu < wall / 3);
}

#ifdef TUTTI_HAVE_UCX
// UCX as it comes (every UCX transport it finds, UCX_TLS unset): each thread rank has its own UCP
// context. A few worlds and algorithms only; the process worlds cover UCX_TLS=tcp and shm.
TEST_CASE("collectives over ucx", "[ranks][ucx]") {
  const int nranks = GENERATE(2, 3);
  const std::string algo = GENERATE("ring", "tree");
  ScopedEnv quiet("UCX_WARN_UNUSED_ENV_VARS", "n");
  runRandomCases(nranks, "ucx", algo, 1, 256 << 10, 3000 + static_cast<uint64_t>(nranks));
}
#endif

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

namespace {

// The algorithm of each operation in a rank's trace (TUTTI_TRACE_FILE) that `wanted` keeps (given
// the operation's name and bytes), in call order.
template <typename Wanted>
std::vector<std::string> tracedAlgorithms(const std::string& traceFile, Wanted&& wanted) {
  std::ifstream in(traceFile);
  std::vector<std::string> algorithms;
  if (!in) return algorithms;
  const nlohmann::json trace = nlohmann::json::parse(in);
  for (const auto& event : trace["traceEvents"])
    if (event["ph"] == "X" &&
        wanted(event["name"].get<std::string>(), event["args"].value("bytes", size_t{0})))
      algorithms.push_back(event["args"]["algorithm"]);
  return algorithms;
}

// The algorithm of each all-reduce, reduce-scatter and allgather in a rank's trace, in call order.
std::vector<std::string> directCandidates(const std::string& traceFile) {
  return tracedAlgorithms(traceFile, [](const std::string& name, size_t) {
    return name == "allreduce" || name == "reduce_scatter" || name == "allgather";
  });
}

}  // namespace

TEST_CASE("direct algorithms reach every rank's buffers in place, else fall back",
          "[ranks][direct]") {
  const int nranks = GENERATE(2, 3, 5, 8);
  const std::string algo = GENERATE("direct", "auto");
  char dir[] = "/tmp/tutti-direct-XXXXXX";
  REQUIRE(mkdtemp(dir));
  std::mt19937_64 rng(4000 + static_cast<uint64_t>(nranks));
  // A forced all-reduce at every size (0, 1, fewer elements than ranks, primes); otherwise sizes
  // where the planner picks direct: 512 KiB to 1 MiB in all (TUTTI_ALGO is all-reduce's only).
  std::vector<Case> cases;
  for (int i = 0; i < 3; ++i) {
    for (Kind kind : {Kind::kAllReduce, Kind::kReduceScatter, Kind::kAllGather}) {
      Case c = randomCase(rng, kind, nranks, 256 << 10);
      const size_t blocks = kind == Kind::kAllReduce ? 1 : static_cast<size_t>(nranks);
      if (algo == "auto" || kind != Kind::kAllReduce)
        c.count = ((512 << 10) + rng() % (512 << 10)) / (tutti_type_size(c.dtype) * blocks) + 1;
      c.registered = true;
      cases.push_back(c);
    }
  }
  // Forced: no elements, and fewer than ranks (empty blocks).
  for (size_t count : {size_t{0}, size_t{1}, static_cast<size_t>(nranks - 1)}) {
    if (algo != "direct") break;
    Case c = randomCase(rng, Kind::kAllReduce, nranks, 256 << 10);
    c.count = count;
    c.registered = true;
    cases.push_back(c);
  }
  // Every case with all buffers registered (with TUTTI_DIRECT_BUFFERS=any), then with the last
  // rank's on the heap: the ranks are threads of one process, so its heap is reachable as it is,
  // unless TUTTI_DIRECT_BUFFERS says registered memory only; then every rank runs another
  // algorithm.
  const std::string directBuffers = GENERATE("any", "registered");
  std::vector<bool> lastRankRegistered{false};
  if (directBuffers == "any") lastRankRegistered.insert(lastRankRegistered.begin(), true);
  const std::string trace = std::string(dir) + "/trace-%r.json";
  {
    ScopedEnv forceAlgo("TUTTI_ALGO", algo);
    // auto as the planner picks: TUTTI_AUTOTUNE would also time the other algorithms.
    ScopedEnv autotune("TUTTI_AUTOTUNE", "off");
    ScopedEnv traceFile("TUTTI_TRACE_FILE", trace);
    ScopedEnv buffers("TUTTI_DIRECT_BUFFERS", directBuffers);
    ThreadWorld world(nranks);
    REQUIRE(world.ok());
    for (const bool lastRegistered : lastRankRegistered) {
      for (const Case& c : cases) {
        INFO(describe(c) << ", world of " << nranks << ", last rank registered " << lastRegistered
                         << ", TUTTI_DIRECT_BUFFERS=" << directBuffers);
        std::vector<std::vector<char>> outputs(static_cast<size_t>(nranks));
        const auto problems = onEveryRank<std::string>(nranks, [&](int rank) {
          Case mine = c;
          mine.registered = lastRegistered || rank != nranks - 1;
          return runCase(world.comm(rank), mine, &outputs[static_cast<size_t>(rank)]);
        });
        for (const std::string& problem : problems) CHECK(problem == "");
        if (c.kind != Kind::kReduceScatter)
          for (int rank = 1; rank < nranks; ++rank)
            CHECK(outputs[static_cast<size_t>(rank)] == outputs[0]);
      }
    }
  }  // destroyed: the traces are written
  for (int rank = 0; rank < nranks; ++rank) {
    const std::string file = std::string(dir) + "/trace-" + std::to_string(rank) + ".json";
    const auto algorithms = directCandidates(file);
    std::remove(file.c_str());
    REQUIRE(algorithms.size() == lastRankRegistered.size() * cases.size());
    for (size_t i = 0; i < algorithms.size(); ++i) {
      const bool allRegistered = lastRankRegistered[i / cases.size()];
      INFO(describe(cases[i % cases.size()])
           << ", TUTTI_DIRECT_BUFFERS=" << directBuffers << ", all registered " << allRegistered);
      if (allRegistered || directBuffers == "any")
        CHECK(algorithms[i] == "direct");
      else
        CHECK((algorithms[i] != "direct" && !algorithms[i].empty()));
    }
  }
  rmdir(dir);
}

namespace {

// The algorithm of each all-reduce of `bytes` in a rank's trace, in call order.
std::vector<std::string> allReducesOf(const std::string& traceFile, size_t bytes) {
  return tracedAlgorithms(traceFile, [bytes](const std::string& name, size_t traced) {
    return name == "allreduce" && traced == bytes;
  });
}

}  // namespace

// TUTTI_AUTOTUNE (runtime/collectives/autotune.hpp), over shm and tcp: two sizes called in turn,
// each rank placing its buffers in place or not at random (its own choice, not its peers'), random
// types and operations checked against the reference. Where it measures, each size's first calls
// run the candidates in turn (direct among them only over shm from direct_min_bytes), then one of
// them, the same on every rank (TUTTI_CHECK_CALLS=1 fails any call where ranks differ); where it
// does not, each size runs one algorithm throughout.
TEST_CASE("autotune: every algorithm in turn, then the one every rank agreed on",
          "[ranks][autotune]") {
  const auto [nranks, mode, measures, transportName] =
      GENERATE(std::tuple{2, "auto", true, "shm"}, std::tuple{2, "auto", true, "tcp"},
               std::tuple{3, "on", true, "shm"}, std::tuple{3, "auto", false, "shm"},
               std::tuple{2, "off", false, "shm"});
  INFO(nranks << " ranks over " << transportName << ", TUTTI_AUTOTUNE=" << mode);
  char dir[] = "/tmp/tutti-autotune-XXXXXX";
  REQUIRE(mkdtemp(dir));
  const std::string trace = std::string(dir) + "/trace-%r.json";
  const size_t small = 4 << 10, large = 320 << 10;  // either side of direct_min_bytes (256K)
  // The longest trial, then a few calls of its choice.
  const int calls = tutti::runtime::SizeTrial::longestCalls() + 6;
  {
    ScopedEnv autotune("TUTTI_AUTOTUNE", mode);
    ScopedEnv checkCalls("TUTTI_CHECK_CALLS", "1");
    ScopedEnv transport("TUTTI_TRANSPORT", transportName);
    ScopedEnv traceFile("TUTTI_TRACE_FILE", trace);
    ThreadWorld world(nranks);
    REQUIRE(world.ok());
    std::mt19937_64 rng(6000 + static_cast<uint64_t>(nranks));
    for (int call = 0; call < 2 * calls; ++call) {
      Case c = randomCase(rng, Kind::kAllReduce, nranks, large);
      c.count = (call % 2 ? large : small) / tutti_type_size(c.dtype);
      const uint64_t placements = rng();
      const auto problems = onEveryRank<std::string>(nranks, [&](int rank) {
        Case mine = c;
        mine.inPlace = (placements >> rank) & 1;
        return runCase(world.comm(rank), mine, nullptr);
      });
      INFO(describe(c) << ", call " << call);
      for (const std::string& problem : problems) REQUIRE(problem == "");
    }
  }  // destroyed: the traces are written
  for (const size_t bytes : {small, large}) {
    INFO(bytes << " bytes");
    // oneshot, ring, tree, doubling; direct over shared memory from direct_min_bytes
    const size_t candidates = bytes < large || std::string(transportName) == "tcp" ? 4 : 5;
    const size_t trial =
        candidates * (tutti::runtime::SizeTrial::kWarmUps + tutti::runtime::SizeTrial::kSamples);
    std::vector<std::string> rank0;
    for (int rank = 0; rank < nranks; ++rank) {
      const std::string file = std::string(dir) + "/trace-" + std::to_string(rank) + ".json";
      const std::vector<std::string> ran = allReducesOf(file, bytes);
      REQUIRE(ran.size() == static_cast<size_t>(calls));
      if (rank == 0) rank0 = ran;
      CHECK(ran == rank0);
    }
    if (!measures) {
      CHECK(std::count(rank0.begin(), rank0.end(), rank0[0]) == calls);
      continue;
    }
    const std::set<std::string> first(rank0.begin(),
                                      rank0.begin() + static_cast<ptrdiff_t>(candidates));
    CHECK(first.size() == candidates);
    CHECK(first.count("direct") == (candidates == 5));
    for (size_t i = candidates; i < trial; ++i) CHECK(rank0[i] == rank0[i % candidates]);
    CHECK(first.count(rank0[trial]) == 1);
    CHECK(std::count(rank0.begin() + static_cast<ptrdiff_t>(trial), rank0.end(), rank0[trial]) ==
          calls - static_cast<ptrdiff_t>(trial));
  }
  for (int rank = 0; rank < nranks; ++rank)
    std::remove((std::string(dir) + "/trace-" + std::to_string(rank) + ".json").c_str());
  rmdir(dir);
}

// A job whose sizes keep changing stops paying for trials: past Autotune::kMaxSizes sizes, a new
// size runs the planner's pick on every call, while a size met before still has its trial.
TEST_CASE("autotune: sizes past the first 64 run the planner's pick", "[ranks][autotune]") {
  char dir[] = "/tmp/tutti-autotune-XXXXXX";
  REQUIRE(mkdtemp(dir));
  const std::string trace = std::string(dir) + "/trace-%r.json";
  const size_t sizes = tutti::runtime::Autotune::kMaxSizes;
  const int calls = tutti::runtime::SizeTrial::longestCalls();
  {
    ScopedEnv checkCalls("TUTTI_CHECK_CALLS", "1");
    ScopedEnv transport("TUTTI_TRANSPORT", "shm");
    ScopedEnv traceFile("TUTTI_TRACE_FILE", trace);
    ThreadWorld world(2);
    REQUIRE(world.ok());
    const auto problems = onEveryRank<std::string>(2, [&](int rank) {
      std::vector<int32_t> data(sizes + 1);
      auto allreduce = [&](size_t count) {
        std::fill(data.begin(), data.end(), rank + 1);
        if (tutti_allreduce(data.data(), data.data(), count, tuttiInt32, tuttiSum, world.comm(rank),
                            nullptr) != tuttiSuccess)
          return std::string(tutti_get_last_error());
        const bool right = std::all_of(data.begin(), data.begin() + static_cast<ptrdiff_t>(count),
                                       [](int32_t x) { return x == 3; });
        return right ? std::string() : "wrong sum at " + std::to_string(count) + " elements";
      };
      for (size_t count = 1; count <= sizes; ++count)
        if (std::string problem = allreduce(count); !problem.empty()) return problem;
      for (int call = 0; call < calls; ++call)
        for (size_t count : {size_t{1}, sizes + 1})
          if (std::string problem = allreduce(count); !problem.empty()) return problem;
      return std::string();
    });
    for (const std::string& problem : problems) CHECK(problem == "");
  }  // destroyed: the traces are written
  for (int rank = 0; rank < 2; ++rank) {
    const std::string file = std::string(dir) + "/trace-" + std::to_string(rank) + ".json";
    const std::vector<std::string> first = allReducesOf(file, sizeof(int32_t));
    const std::vector<std::string> past = allReducesOf(file, (sizes + 1) * sizeof(int32_t));
    std::remove(file.c_str());
    REQUIRE(past.size() == static_cast<size_t>(calls));
    CHECK(std::count(past.begin(), past.end(), past[0]) == calls);
    REQUIRE(first.size() == static_cast<size_t>(calls) + 1);
    CHECK(std::set<std::string>(first.begin(), first.end()).size() > 1);
  }
  rmdir(dir);
}

TEST_CASE("direct over transports without peer-memory access runs another algorithm",
          "[ranks][direct]") {
  // tcp, and a registered transport that does not share memory, give no PeerMemory
  // (transport/peer_memory.hpp): forced direct reaches nothing, even between threads.
  const std::string transport = GENERATE("tcp", "in-process");
  registerInProcessTransport();
  char dir[] = "/tmp/tutti-direct-XXXXXX";
  REQUIRE(mkdtemp(dir));
  const std::string trace = std::string(dir) + "/trace-%r.json";
  const size_t count = 100003;
  {
    ScopedEnv forceTransport("TUTTI_TRANSPORT", transport);
    ScopedEnv forceAlgo("TUTTI_ALGO", "direct");
    ScopedEnv traceFile("TUTTI_TRACE_FILE", trace);
    ThreadWorld world(2);
    REQUIRE(world.ok());
    const auto sums = onEveryRank<std::vector<float>>(2, [&](int rank) {
      tutti::RegisteredArray<float> data(count);
      std::fill(data.data(), data.data() + count, static_cast<float>(rank + 1));
      tutti_allreduce(data.data(), data.data(), count, tuttiFloat32, tuttiSum, world.comm(rank),
                      nullptr);
      return std::vector<float>(data.data(), data.data() + count);
    });
    for (const auto& sum : sums) CHECK(sum == std::vector<float>(count, 3.0f));
  }  // destroyed: the traces are written
  for (int rank = 0; rank < 2; ++rank) {
    const std::string file = std::string(dir) + "/trace-" + std::to_string(rank) + ".json";
    const auto algorithms = directCandidates(file);
    std::remove(file.c_str());
    INFO("TUTTI_TRANSPORT=" << transport << ", rank " << rank);
    REQUIRE(algorithms.size() == 1);
    CHECK(algorithms[0] != "direct");
  }
  rmdir(dir);
}

TEST_CASE("a transport that claims shared memory but gives no peer-memory access is refused",
          "[ranks][registry]") {
  tutti::tests::Warnings().expect();  // a failed init is a warning
  registerMemoryClaimingTransport();
  ScopedEnv forceTransport("TUTTI_TRANSPORT", "in-process-claims-memory");
  ThreadWorld world(2);
  CHECK_FALSE(world.ok());
  CHECK_THAT(world.error(), Contains("transport in-process-claims-memory shares memory but gives "
                                     "no peer-memory access"));
}

TEST_CASE("direct all-reduce: ranks that disagree on the count fail, naming both",
          "[ranks][direct]") {
  tutti::tests::Warnings().expect();  // its failure is a warning
  ScopedEnv forceAlgo("TUTTI_ALGO", "direct");
  ScopedEnv timeout("TUTTI_TIMEOUT", "60");
  ThreadWorld world(2);
  REQUIRE(world.ok());
  // Both allocations hold either count, so only the offers can tell.
  const auto errors = onEveryRank<std::string>(2, [&](int rank) {
    tutti::RegisteredArray<float> data(300000);
    const size_t count = rank == 0 ? 200000 : 200001;
    const tuttiResult_t rc = tutti_allreduce(data.data(), data.data(), count, tuttiFloat32,
                                             tuttiSum, world.comm(rank), nullptr);
    return std::string(tutti_get_error_string(rc)) + ": " + tutti_get_last_error();
  });
  CHECK_THAT(errors[0], Contains("rank 0 called allreduce(count=200000, float32, sum) as call #1; "
                                 "rank 1 called allreduce(count=200001, float32, sum) as call #1"));
  CHECK_THAT(errors[1], Contains("rank 1 called allreduce(count=200001, float32, sum) as call #1; "
                                 "rank 0 called allreduce(count=200000, float32, sum) as call #1"));
  for (const std::string& error : errors) CHECK_THAT(error, Contains("invalid usage"));
}

TEST_CASE("direct: a failure in the last barrier names the operation's size", "[ranks][direct]") {
  tutti::tests::Warnings().expect();  // both failures are warnings
  ScopedEnv forceAlgo("TUTTI_ALGO", "direct");
  ScopedEnv timeout("TUTTI_TIMEOUT", "60");
  ThreadWorld world(2);
  REQUIRE(world.ok());
  std::vector<float> data0(1000, 1.0f), data1(1000, 2.0f);
  // Rank 1 posts its offer, then gives up waiting for rank 0's.
  REQUIRE(tutti_comm_set_timeout(world.comm(1), 1) == tuttiSuccess);
  CHECK(tutti_allreduce(data1.data(), data1.data(), data1.size(), tuttiFloat32, tuttiSum,
                        world.comm(1), nullptr) == tuttiTimeout);
  // Rank 0 finds the offer, reduces, and then waits for rank 1 in the last barrier in vain.
  REQUIRE(tutti_comm_set_timeout(world.comm(0), 500) == tuttiSuccess);
  CHECK(tutti_allreduce(data0.data(), data0.data(), data0.size(), tuttiFloat32, tuttiSum,
                        world.comm(0), nullptr) != tuttiSuccess);
  CHECK_THAT(tutti_get_last_error(), Contains("rank 0: allreduce #1 (direct, 4000 bytes)"));
}

TEST_CASE("direct: a reduce-scatter never meets an allgather of the same size", "[ranks][direct]") {
  tutti::tests::Warnings().expect();  // its failure is a warning
  ThreadWorld world(2);
  REQUIRE(world.ok());
  // Both 800000 bytes in all, both read only the peers' send buffers: the same messages.
  const auto errors = onEveryRank<std::string>(2, [&](int rank) {
    tutti::RegisteredArray<float> send(200000), recv(200000);
    const tuttiResult_t rc =
        rank == 0 ? tutti_reduce_scatter(send.data(), recv.data(), 100000, tuttiFloat32, tuttiSum,
                                         world.comm(rank), nullptr)
                  : tutti_allgather(send.data(), recv.data(), 100000, tuttiFloat32,
                                    world.comm(rank), nullptr);
    return std::string(tutti_get_error_string(rc)) + ": " + tutti_get_last_error();
  });
  // Both calls named; in either order, since a rank may report the mismatch the other found.
  for (const std::string& error : errors)
    CHECK_THAT(error,
               Contains("rank 0 called reduce_scatter(count=100000, float32, sum) as call #1") &&
                   Contains("rank 1 called allgather(count=100000, float32) as call #1"));
}

TEST_CASE("tiny FIFOs do not deadlock any algorithm", "[ranks][slots]") {
  ScopedEnv slots("TUTTI_SLOTS", "2");
  ScopedEnv chunk("TUTTI_CHUNK_BYTES", "4096");
  const std::string algo = GENERATE("ring", "tree", "oneshot", "doubling");
  runRandomCases(GENERATE(4, 5), "shm", algo, 2, 64 << 10, 3000);
}

TEST_CASE("collectives follow a scrambled ring order", "[ranks][ring-order]") {
  const int nranks = GENERATE(2, 3, 4, 5, 8);
  const std::string transport = GENERATE("shm", "tcp");
  const std::string order = scrambledRing(nranks, 4000 + static_cast<uint64_t>(nranks));
  ScopedEnv ring("TUTTI_RING_ORDER", order);
  INFO("TUTTI_RING_ORDER=" << order);
  runRandomCases(nranks, transport, "ring", 3, 256 << 10, 5000 + static_cast<uint64_t>(nranks));
}

TEST_CASE("a scrambled ring order with tiny FIFOs pipelines many slices", "[ranks][ring-order]") {
  ScopedEnv slots("TUTTI_SLOTS", "2");
  ScopedEnv chunk("TUTTI_CHUNK_BYTES", "4096");
  const int nranks = GENERATE(4, 5);
  const std::string order = scrambledRing(nranks, 6000 + static_cast<uint64_t>(nranks));
  ScopedEnv ring("TUTTI_RING_ORDER", order);
  INFO("TUTTI_RING_ORDER=" << order);
  runRandomCases(nranks, "shm", "ring", 2, 64 << 10, 6100);
}

TEST_CASE("split communicators ring over their members in the given order", "[ranks][ring-order]") {
  const int nranks = 7;
  const std::string order = scrambledRing(nranks, 7000);
  ScopedEnv ring("TUTTI_RING_ORDER", order);
  ScopedEnv algo("TUTTI_ALGO", "ring");
  ScopedEnv timeout("TUTTI_TIMEOUT", "60");
  INFO("TUTTI_RING_ORDER=" << order);
  ThreadWorld world(nranks);
  REQUIRE(world.ok());
  // Colors rank % 3 (3, 2 and 2 members), keys reversing the rank order.
  const auto children = onEveryRank<tuttiComm_t>(nranks, [&](int rank) {
    tuttiComm_t child = nullptr;
    // Checked on this thread: Catch's assertions are not thread-safe. A failed split is null.
    tutti_comm_split(world.comm(rank), rank % 3, -rank, &child);
    return child;
  });
  for (int color = 0; color < 3; ++color) {
    std::vector<tuttiComm_t> members;
    for (int rank = nranks - 1; rank >= 0; --rank)
      if (rank % 3 == color) members.push_back(children[static_cast<size_t>(rank)]);
    REQUIRE(std::find(members.begin(), members.end(), nullptr) == members.end());
    runCases(
        static_cast<int>(members.size()),
        [&](int rank) { return members[static_cast<size_t>(rank)]; }, 2, 64 << 10,
        7100 + static_cast<uint64_t>(color));
  }
  onEveryRank<int>(nranks, [&](int rank) {
    return static_cast<int>(tutti_comm_destroy(children[static_cast<size_t>(rank)]));
  });
}

namespace {

// Broadcasts from rank 0 of comms, with every rank but `absent`, under TUTTI_TIMEOUT=1; what each
// call returned and said.
std::vector<std::string> broadcastWithout(const std::vector<tuttiComm_t>& comms, int absent) {
  return onEveryRank<std::string>(static_cast<int>(comms.size()), [&](int rank) {
    if (rank == absent) return std::string("absent");
    std::vector<float> data(64, static_cast<float>(rank));
    if (tutti_broadcast(data.data(), data.data(), data.size(), tuttiFloat32, 0,
                        comms[static_cast<size_t>(rank)], nullptr) == tuttiSuccess)
      return std::string("ok");
    return std::string(tutti_get_last_error());
  });
}

}  // namespace

TEST_CASE("the chains are the given ring: the rank after an absent one waits for it",
          "[ranks][ring-order]") {
  tutti::tests::Warnings().expect();  // it times out on purpose
  ScopedEnv timeout("TUTTI_TIMEOUT", "1");
  SECTION("a world") {
    // Chain from root 0: 0 2 3 1. Rank 3 stays out: rank 2 hands it its slice and is done;
    // rank 1 waits for rank 3. In rank order (0 1 2 3) rank 1 would get its data from rank 0.
    ScopedEnv ring("TUTTI_RING_ORDER", "0 2 3 1");
    ThreadWorld world(4);
    REQUIRE(world.ok());
    const auto outcomes =
        broadcastWithout({world.comm(0), world.comm(1), world.comm(2), world.comm(3)}, 3);
    CHECK(outcomes[0] == "ok");
    CHECK(outcomes[2] == "ok");
    CHECK_THAT(outcomes[1],
               Contains("rank 1: broadcast #1") && Contains("waiting for data from rank 3"));
  }
  SECTION("a split communicator") {
    // World ring 4 2 0 1 3 5; the even ranks (new ranks 0 1 2 for world ranks 0 2 4) keep its
    // order: 2 1 0, so the chain from new rank 0 is 0 2 1. New rank 2 stays out: new rank 1 waits
    // for it. Planned afresh or in rank order, the chain would be 0 1 2 and new rank 1 done.
    ScopedEnv ring("TUTTI_RING_ORDER", "4,2,0,1,3,5");
    ThreadWorld world(6);
    REQUIRE(world.ok());
    const auto children = onEveryRank<tuttiComm_t>(6, [&](int rank) {
      tuttiComm_t child = nullptr;
      tutti_comm_split(world.comm(rank), rank % 2, rank, &child);
      return child;
    });
    REQUIRE(std::find(children.begin(), children.end(), nullptr) == children.end());
    const auto outcomes = broadcastWithout({children[0], children[2], children[4]}, 2);
    CHECK(outcomes[0] == "ok");
    CHECK_THAT(outcomes[1],
               Contains("rank 1: broadcast #1") && Contains("waiting for data from rank 2"));
    onEveryRank<int>(6, [&](int rank) {
      return static_cast<int>(tutti_comm_destroy(children[static_cast<size_t>(rank)]));
    });
  }
}

namespace {

// Two ranks over `transport` whose FIFOs hold 8 slots of 1 MiB, one socket a peer: a broadcast
// of 48 MiB stalls on a peer that does not read it. Their failures are warnings.
struct StallingPair {
  explicit StallingPair(const std::string& transport) : transport("TUTTI_TRANSPORT", transport) {
    tutti::tests::Warnings().expect();
    REQUIRE(tutti_comm_init_all(comms.data(), 2) == tuttiSuccess);
  }
  ScopedEnv transport;
  ScopedEnv quiet{"UCX_WARN_UNUSED_ENV_VARS", "n"};
  ScopedEnv slotBytes{"TUTTI_CHUNK_BYTES", std::to_string(1 << 20)};
  ScopedEnv slots{"TUTTI_SLOTS", "8"};
  ScopedEnv sockets{"TUTTI_NSOCKS", "1"};
  std::vector<tuttiComm_t> comms = std::vector<tuttiComm_t>(2, nullptr);
};

}  // namespace

// Over tcp a step's data goes out from the caller's buffer itself (no copy into a slot). When the
// operation fails with such sends still queued behind full sockets, the caller may free its buffer
// as soon as the call returns, and destroying the communicator then flushes what tcp still holds
// while the peer, flushing too, reads it: from tcp's own copy, never from the freed buffer. Each
// rank broadcasts 48 MiB as the root (their roots differ), so neither reads the other's frames
// beyond its 8 receive slots of 1 MiB and what one socket's buffers hold: both time out waiting
// for a free slot (or fail on hearing that the other did), and only then, buffers freed, destroy.
// The sanitized build checks the memory sendmsg reads: a read of a freed buffer fails the test
// there.
TEST_CASE("a failed operation's queued sends do not read the caller's freed buffer",
          "[ranks][tcp]") {
  const StallingPair pair("tcp");
  const std::vector<tuttiComm_t>& comms = pair.comms;
  std::latch bothFailed(2);  // a rank that destroyed early would read the other's sends
  const auto outcomes = onEveryRank<std::string>(2, [&](int rank) {
    tuttiComm_t comm = comms[static_cast<size_t>(rank)];
    tutti_comm_set_timeout(comm, 1000);
    std::string outcome;
    {
      std::vector<char> data(48 << 20, static_cast<char>(rank));
      if (tutti_broadcast(data.data(), data.data(), data.size(), tuttiUint8, rank, comm, nullptr) !=
          tuttiSuccess)
        outcome = tutti_get_last_error();
    }
    bothFailed.arrive_and_wait();
    CHECK(tutti_comm_destroy(comm) == tuttiSuccess);
    return outcome;
  });
  for (const std::string& outcome : outcomes)
    CHECK_THAT(outcome, Contains("broadcast #1") && Contains("waiting for a free slot to rank"));
}

// A failed communicator's connections close without delivering what they still hold: rank 0
// broadcasts 48 MiB to a rank 1 that never joins and never reads, times out with sends queued
// (tcp: behind full sockets; ucx: waiting for rank 1's credits), and destroys its communicator at
// once, where it used to wait for delivery for the transport's whole 5 s limit (a destroy that
// waited on a peer that is gone or stuck). Rank 1 waits for that destroy for 4.5 s (rank 0's
// failure takes 1) before destroying its own, which would release such a wait: the order of the
// two says which came first.
TEST_CASE("a failed communicator closes at once, whatever its peer does not read",
          "[ranks][tcp][ucx]") {
#ifdef TUTTI_HAVE_UCX
  const std::string transport = GENERATE("tcp", "ucx");
#else
  const std::string transport = "tcp";
#endif
  INFO(transport);
  const StallingPair pair(transport);
  const std::vector<tuttiComm_t>& comms = pair.comms;
  std::atomic<bool> rank0Destroyed{false};
  bool destroyedFirst = false;
  std::string failure;
  onEveryRank<int>(2, [&](int rank) {
    tuttiComm_t comm = comms[static_cast<size_t>(rank)];
    if (rank == 0) {
      tutti_comm_set_timeout(comm, 1000);
      std::vector<char> data(48 << 20, 1);
      if (tutti_broadcast(data.data(), data.data(), data.size(), tuttiUint8, 0, comm, nullptr) !=
          tuttiSuccess)
        failure = tutti_get_last_error();
      CHECK(tutti_comm_destroy(comm) == tuttiSuccess);
      rank0Destroyed = true;
    } else {
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(4500);
      while (!rank0Destroyed && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      destroyedFirst = rank0Destroyed;
      CHECK(tutti_comm_destroy(comm) == tuttiSuccess);
    }
    return 0;
  });
  CHECK_THAT(failure, Contains("broadcast #1") && Contains("timed out"));
  CHECK(destroyedFirst);
}
