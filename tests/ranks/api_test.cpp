// The public API around the collectives: bad arguments change nothing and name what was wrong,
// init failures (bad rank, disagreeing world sizes, bad environment), requests with timeouts,
// abort, deadlines (TUTTI_TIMEOUT and a communicator's own), split, and the C++ wrapper.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "tests/warnings.hpp"
#include "tutti/tutti.hpp"
#include "world.hpp"

using namespace tutti::testing;
using Catch::Matchers::Contains;

TEST_CASE("invalid arguments fail clearly and change nothing", "[api][bad-input]") {
  ThreadWorld world(2);
  REQUIRE(world.ok());
  tuttiComm_t comm = world.comm(0);
  std::vector<float> send(16, 1.0f), recv(16, 7.0f);
  const std::vector<float> untouched = recv;

  CHECK(tutti_allreduce(send.data(), nullptr, 16, tuttiFloat32, tuttiSum, comm, nullptr) ==
        tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(),
             Contains("rank 0: allreduce #1") && Contains("recvbuf is NULL"));
  CHECK(tutti_allreduce(nullptr, recv.data(), 16, tuttiFloat32, tuttiSum, comm, nullptr) ==
        tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("sendbuf is NULL"));
  CHECK(tutti_allreduce(send.data(), recv.data(), SIZE_MAX / 2, tuttiFloat32, tuttiSum, comm,
                        nullptr) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("overflows"));
  CHECK(tutti_allreduce(send.data(), recv.data(), 16, static_cast<tuttiDataType_t>(42), tuttiSum,
                        comm, nullptr) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("invalid data type 42"));
  CHECK(tutti_allreduce(send.data(), recv.data(), 16, tuttiFloat32, static_cast<tuttiRedOp_t>(9),
                        comm, nullptr) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("invalid reduction operation 9"));
  CHECK(tutti_broadcast(send.data(), recv.data(), 16, tuttiFloat32, 2, comm, nullptr) ==
        tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("root 2 is out of range [0, 2)"));
  CHECK(tutti_reduce(send.data(), recv.data(), 16, tuttiFloat32, tuttiSum, -1, comm, nullptr) ==
        tuttiInvalidArgument);
  CHECK(tutti_send(send.data(), 16, tuttiFloat32, 5, comm, nullptr) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("peer 5 is out of range"));
  CHECK(tutti_allreduce(send.data(), send.data() + 1, 8, tuttiFloat32, tuttiSum, comm, nullptr) ==
        tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("overlap"));
  CHECK(tutti_allreduce(send.data(), recv.data(), 16, tuttiFloat32, tuttiSum, nullptr, nullptr) ==
        tuttiInvalidArgument);
  CHECK(recv == untouched);

  // Nothing was consumed: the communicator still works, and numbering starts at #1.
  const auto results = onEveryRank<int>(2, [&](int rank) {
    std::vector<float> in(16, static_cast<float>(rank + 1)), out(16, 0.0f);
    if (tutti_allreduce(in.data(), out.data(), 16, tuttiFloat32, tuttiSum, world.comm(rank),
                        nullptr) != tuttiSuccess)
      return -1;
    return static_cast<int>(out[15]);
  });
  CHECK(results == std::vector<int>{3, 3});
}

TEST_CASE("the last error stays until the next failure and can be set from above", "[api]") {
  int version = 0;
  CHECK(tutti_get_version(nullptr) == tuttiInvalidArgument);
  CHECK(tutti_get_version(&version) == tuttiSuccess);
  CHECK_THAT(tutti_get_last_error(), Contains("version is NULL"));
  CHECK(tutti_set_last_error("a layer above failed") == tuttiSuccess);
  CHECK(std::string(tutti_get_last_error()) == "a layer above failed");
  CHECK(tutti_set_last_error(nullptr) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("message is NULL"));
}

TEST_CASE("init rejects bad ranks, sizes and ids", "[api][bad-input]") {
  tuttiUniqueId id;
  REQUIRE(tutti_get_unique_id(&id) == tuttiSuccess);
  tuttiComm_t comm = nullptr;
  CHECK(tutti_comm_init_rank(&comm, id, 3, 3) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("rank 3 is out of range [0, 3)"));
  CHECK(tutti_comm_init_rank(&comm, id, 0, 0) == tuttiInvalidArgument);
  CHECK(comm == nullptr);
  tuttiUniqueId garbage;
  std::memset(garbage.internal, 0x42, sizeof(garbage.internal));
  CHECK(tutti_comm_init_rank(&comm, garbage, 0, 2) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("not a tutti unique id"));
  CHECK(tutti_comm_init_all(nullptr, 2) == tuttiInvalidArgument);
}

TEST_CASE("ranks that disagree on the world size fail, naming both values", "[api][bad-input]") {
  tutti::tests::Warnings().expect();  // its failure is a warning
  ScopedEnv timeout("TUTTI_TIMEOUT", "30");
  tuttiUniqueId id;
  REQUIRE(tutti_get_unique_id(&id) == tuttiSuccess);
  const auto start = std::chrono::steady_clock::now();
  const auto messages = onEveryRank<std::string>(2, [&](int rank) {
    tuttiComm_t comm = nullptr;
    if (tutti_comm_init_rank(&comm, id, rank, rank == 0 ? 2 : 3) == tuttiSuccess) {
      tutti_comm_destroy(comm);
      return std::string("joined");
    }
    return std::string(tutti_get_last_error());
  });
  for (const std::string& message : messages) {
    CHECK_THAT(message, Contains("world size mismatch"));
    CHECK_THAT(message, Contains("2") && Contains("3"));
  }
  // Failed promptly, not by the 30 s deadline.
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
}

TEST_CASE("two ranks claiming one rank number both fail", "[api][bad-input]") {
  tutti::tests::Warnings().expect();  // its failure is a warning
  ScopedEnv timeout("TUTTI_TIMEOUT", "30");
  tuttiUniqueId id;
  REQUIRE(tutti_get_unique_id(&id) == tuttiSuccess);
  const auto messages = onEveryRank<std::string>(2, [&](int) {
    tuttiComm_t comm = nullptr;
    if (tutti_comm_init_rank(&comm, id, 0, 2) == tuttiSuccess) {
      tutti_comm_destroy(comm);
      return std::string("joined");
    }
    return std::string(tutti_get_last_error());
  });
  for (const std::string& message : messages) CHECK_THAT(message, Contains("rank 0 joined twice"));
}

TEST_CASE("bad TUTTI_* values are errors that name the variable", "[api][bad-input][config]") {
  const std::pair<const char*, const char*> bad = GENERATE(
      std::make_pair("TUTTI_CHUNK_BYTES", "abc"), std::make_pair("TUTTI_CHUNK_BYTES", "1"),
      std::make_pair("TUTTI_ALGO", "fastest"), std::make_pair("TUTTI_TIMEOUT", "-1"),
      std::make_pair("TUTTI_SLOTS", "1000"), std::make_pair("TUTTI_TRANSPORT", "carrier-pigeon"),
      std::make_pair("TUTTI_RING_ORDER", "1 x"), std::make_pair("TUTTI_RING_ORDER", "1 1"),
      std::make_pair("TUTTI_RING_ORDER", "0 1 2"), std::make_pair("TUTTI_RING_ORDER", "1"));
  ScopedEnv env(bad.first, bad.second);
  std::vector<tuttiComm_t> comms(2, nullptr);
  CHECK(tutti_comm_init_all(comms.data(), 2) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains(bad.first));
}

namespace {

// The Cpus_allowed_list of a /proc status file ("0-1"), "" when it has none.
std::string cpusAllowed(const std::filesystem::path& status) {
  std::ifstream in(status);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("Cpus_allowed_list:", 0) == 0) return line.substr(line.find('\t') + 1);
  return "";
}

// cpusAllowed of each of this process's tutti-engine threads.
std::vector<std::string> engineCpuLists() {
  std::vector<std::string> lists;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::string name;
    std::getline(std::ifstream(task.path() / "comm") >> std::ws, name);
    if (name == "tutti-engine") lists.push_back(cpusAllowed(task.path() / "status"));
  }
  return lists;
}

// The engine threads' CPU lists once both ranks of a thread world ran an asynchronous
// all-reduce, which starts their engines.
std::vector<std::string> enginesAfterAsyncAllreduce(const char* affinity) {
  ScopedEnv env("TUTTI_ENGINE_AFFINITY", affinity);
  ThreadWorld world(2);
  REQUIRE(world.ok());
  std::vector<int32_t> in0(64, 1), in1(64, 2), out0(64), out1(64);
  tuttiRequest_t requests[2] = {nullptr, nullptr};
  REQUIRE(tutti_allreduce(in0.data(), out0.data(), 64, tuttiInt32, tuttiSum, world.comm(0),
                          &requests[0]) == tuttiSuccess);
  REQUIRE(tutti_allreduce(in1.data(), out1.data(), 64, tuttiInt32, tuttiSum, world.comm(1),
                          &requests[1]) == tuttiSuccess);
  for (tuttiRequest_t request : requests) {
    CHECK(tutti_wait(request) == tuttiSuccess);
    CHECK(tutti_request_free(request) == tuttiSuccess);
  }
  CHECK(out0 == std::vector<int32_t>(64, 3));
  CHECK(out1 == out0);
  return engineCpuLists();
}

}  // namespace

TEST_CASE("TUTTI_ENGINE_AFFINITY: spread keeps each local rank's engine to a CPU of its own",
          "[api][async]") {
  const std::string process = cpusAllowed("/proc/self/status");
  const std::vector<std::string> free = enginesAfterAsyncAllreduce("none");
  CHECK(free == std::vector<std::string>(2, process));
  const std::vector<std::string> spread = enginesAfterAsyncAllreduce("spread");
  REQUIRE(spread.size() == 2);
  if (process.find_first_of(",-") == std::string::npos) {  // one CPU: nothing to spread over
    CHECK(spread == free);
    return;
  }
  for (const std::string& cpus : spread) CHECK(cpus.find_first_of(",-") == std::string::npos);
  CHECK(spread[0] != spread[1]);
}

TEST_CASE("a request can be tested and waited for with a timeout", "[api][async]") {
  tutti::tests::Warnings().expect();  // it times out on purpose
  ThreadWorld world(2);
  REQUIRE(world.ok());
  std::vector<int32_t> in0(1000, 1), out0(1000, 0), in1(1000, 2), out1(1000, 0);
  tuttiRequest_t request = nullptr;
  REQUIRE(tutti_allreduce(in0.data(), out0.data(), 1000, tuttiInt32, tuttiSum, world.comm(0),
                          &request) == tuttiSuccess);
  // Rank 1 has not called yet: the operation cannot finish.
  CHECK(tutti_test(request) == tuttiInProgress);
  CHECK(tutti_wait_timeout(request, 20) == tuttiTimeout);
  CHECK(tutti_allreduce(in1.data(), out1.data(), 1000, tuttiInt32, tuttiSum, world.comm(1),
                        nullptr) == tuttiSuccess);
  CHECK(tutti_wait(request) == tuttiSuccess);
  CHECK(tutti_test(request) == tuttiSuccess);
  CHECK(tutti_request_free(request) == tuttiSuccess);
  CHECK(out0 == std::vector<int32_t>(1000, 3));
  CHECK(out1 == out0);
}

TEST_CASE("a timeout too long for the clock waits until the request completes", "[api][async]") {
  // Past ~9.2e12 ms, now + timeout overflows the clock's nanoseconds.
  const int64_t timeoutMs = GENERATE(int64_t{9'300'000'000'000}, INT64_MAX);
  ThreadWorld world(2);
  REQUIRE(world.ok());
  std::vector<int32_t> in0(1000, 1), out0(1000, 0), in1(1000, 2), out1(1000, 0);
  tuttiRequest_t request = nullptr;
  REQUIRE(tutti_allreduce(in0.data(), out0.data(), 1000, tuttiInt32, tuttiSum, world.comm(0),
                          &request) == tuttiSuccess);
  // Rank 1 calls a while after rank 0 starts waiting, so the wait finds the request pending.
  std::thread rank1([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    CHECK(tutti_allreduce(in1.data(), out1.data(), 1000, tuttiInt32, tuttiSum, world.comm(1),
                          nullptr) == tuttiSuccess);
  });
  CHECK(tutti_wait_timeout(request, timeoutMs) == tuttiSuccess);
  rank1.join();
  CHECK(tutti_request_free(request) == tuttiSuccess);
  CHECK(out0 == std::vector<int32_t>(1000, 3));
  CHECK(out1 == out0);
}

TEST_CASE("abort unblocks a rank waiting for a peer that never comes", "[api][abort]") {
  tutti::tests::Warnings().expect();  // the abort is a warning
  ThreadWorld world(2);
  REQUIRE(world.ok());
  std::atomic<tuttiResult_t> result{tuttiSuccess};
  std::string message;
  std::thread waiter([&] {
    std::vector<float> data(64, 1.0f);
    result = tutti_allreduce(data.data(), data.data(), data.size(), tuttiFloat32, tuttiSum,
                             world.comm(0), nullptr);
    message = tutti_get_last_error();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(tutti_comm_abort(world.comm(0)) == tuttiSuccess);
  waiter.join();
  CHECK(result.load() != tuttiSuccess);
  CHECK_THAT(message, Contains("abort"));
  tuttiResult_t asyncError = tuttiSuccess;
  CHECK(tutti_comm_get_async_error(world.comm(0), &asyncError) == tuttiSuccess);
  CHECK(asyncError != tuttiSuccess);
  // Later operations fail at once with the same error.
  std::vector<float> data(4, 1.0f);
  CHECK(tutti_allreduce(data.data(), data.data(), 4, tuttiFloat32, tuttiSum, world.comm(0),
                        nullptr) != tuttiSuccess);
}

TEST_CASE("a rank left alone times out, naming the operation and the peer", "[api][timeout]") {
  tutti::tests::Warnings().expect();  // it times out on purpose
  ScopedEnv timeout("TUTTI_TIMEOUT", "1");
  ThreadWorld world(2);
  REQUIRE(world.ok());
  std::vector<float> data(64, 1.0f);
  CHECK(tutti_allreduce(data.data(), data.data(), data.size(), tuttiFloat32, tuttiSum,
                        world.comm(0), nullptr) == tuttiTimeout);
  CHECK_THAT(tutti_get_last_error(), Contains("rank 0: allreduce #1") && Contains("rank 1"));
}

// rank 0 all-reduces on comm alone; returns its error message, checking that the call failed
// with tuttiTimeout after `expected`, well before TUTTI_TIMEOUT (60 s).
static std::string timesOutAlone(tuttiComm_t comm, std::chrono::milliseconds expected) {
  std::vector<float> data(64, 1.0f);
  const auto start = std::chrono::steady_clock::now();
  CHECK(tutti_allreduce(data.data(), data.data(), data.size(), tuttiFloat32, tuttiSum, comm,
                        nullptr) == tuttiTimeout);
  const std::string message = tutti_get_last_error();
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(took >= expected);
  CHECK(took < std::chrono::seconds(20));
  return message;
}

TEST_CASE("a communicator's own timeout replaces TUTTI_TIMEOUT", "[api][timeout]") {
  tutti::tests::Warnings().expect();  // it times out on purpose
  ScopedEnv timeout("TUTTI_TIMEOUT", "60");
  ThreadWorld world(2);
  REQUIRE(world.ok());
  // A communicator split from it starts with the timeout it had then; later changes are its own.
  REQUIRE(tutti_comm_set_timeout(world.comm(0), 3000) == tuttiSuccess);
  const auto children = onEveryRank<tuttiComm_t>(2, [&](int rank) {
    tuttiComm_t child = nullptr;
    tutti_comm_split(world.comm(rank), 0, rank, &child);
    return child;
  });
  REQUIRE(children[0] != nullptr);
  REQUIRE(children[1] != nullptr);
  REQUIRE(tutti_comm_set_timeout(world.comm(0), 1500) == tuttiSuccess);
  // Rank 1 never calls: rank 0's waits fail after their own timeouts.
  CHECK_THAT(timesOutAlone(world.comm(0), std::chrono::milliseconds(1500)),
             Contains("rank 0: allreduce #1") && Contains("timed out after 1500 ms"));
  CHECK_THAT(timesOutAlone(children[0], std::chrono::milliseconds(3000)),
             Contains("timed out after 3 s"));
  onEveryRank<int>(2, [&](int rank) {
    return static_cast<int>(tutti_comm_destroy(children[static_cast<size_t>(rank)]));
  });
}

TEST_CASE("a timeout set while an operation waits bounds the operations after it",
          "[api][timeout]") {
  tutti::tests::Warnings().expect();  // it times out on purpose
  ScopedEnv timeout("TUTTI_TIMEOUT", "60");
  ThreadWorld world(2);
  REQUIRE(world.ok());
  std::vector<int32_t> in0(64, 1), out0(64, 0), in1(64, 2), out1(64, 0);
  tuttiRequest_t request = nullptr;
  REQUIRE(tutti_allreduce(in0.data(), out0.data(), 64, tuttiInt32, tuttiSum, world.comm(0),
                          &request) == tuttiSuccess);
  // Set from this thread while the engine's thread waits for rank 1: that wait keeps its 60 s.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  REQUIRE(tutti_comm_set_timeout(world.comm(0), 1000) == tuttiSuccess);
  CHECK(tutti_wait_timeout(request, 2500) == tuttiTimeout);
  CHECK(tutti_test(request) == tuttiInProgress);  // not failed: still waiting
  CHECK(tutti_allreduce(in1.data(), out1.data(), 64, tuttiInt32, tuttiSum, world.comm(1),
                        nullptr) == tuttiSuccess);
  CHECK(tutti_request_free(request) == tuttiSuccess);
  CHECK(out0 == std::vector<int32_t>(64, 3));
  // The next operation has the new timeout.
  CHECK_THAT(timesOutAlone(world.comm(0), std::chrono::milliseconds(1000)),
             Contains("rank 0: allreduce #2") && Contains("timed out after 1 s"));
}

TEST_CASE("a communicator's timeout must be from 1 ms to 7 days", "[api][bad-input]") {
  auto comms = tutti::Comm::world(2);
  for (const int64_t bad : {int64_t{0}, int64_t{-5}, int64_t{604800001}}) {
    CHECK(tutti_comm_set_timeout(comms[0].handle(), bad) == tuttiInvalidArgument);
    CHECK_THAT(tutti_get_last_error(), Contains("rank 0: timeout_ms " + std::to_string(bad) +
                                                " is out of range [1, 604800000]"));
  }
  CHECK(tutti_comm_set_timeout(nullptr, 1000) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("the communicator is NULL"));
  CHECK_THROWS_WITH(comms[1].setTimeout(std::chrono::milliseconds(0)),
                    Contains("rank 1: timeout_ms 0 is out of range"));
  CHECK_NOTHROW(comms[1].setTimeout(std::chrono::milliseconds(1)));
  CHECK_NOTHROW(comms[1].setTimeout(std::chrono::hours(24 * 7)));
}

TEST_CASE("split makes communicators of the ranks with the same color", "[api][split]") {
  ThreadWorld world(5);
  REQUIRE(world.ok());
  struct Outcome {
    int rank = -1, size = -1, sum = -1;
    bool null = false;
  };
  const auto outcomes = onEveryRank<Outcome>(5, [&](int rank) {
    Outcome outcome;
    // Colors: even ranks 0, odd ranks 1, rank 4 opts out; keys reverse the order.
    const int color = rank == 4 ? TUTTI_SPLIT_NOCOLOR : rank % 2;
    tuttiComm_t child = nullptr;
    if (tutti_comm_split(world.comm(rank), color, 10 - rank, &child) != tuttiSuccess)
      return outcome;
    if (!child) {
      outcome.null = true;
      return outcome;
    }
    tutti_comm_rank(child, &outcome.rank);
    tutti_comm_size(child, &outcome.size);
    int32_t value = rank, total = 0;
    tutti_allreduce(&value, &total, 1, tuttiInt32, tuttiSum, child, nullptr);
    outcome.sum = total;
    tutti_comm_destroy(child);
    return outcome;
  });
  CHECK(outcomes[0].size == 2);
  CHECK(outcomes[0].rank == 1);  // key 10 > key 8 of rank 2
  CHECK(outcomes[2].rank == 0);
  CHECK(outcomes[0].sum == 2);
  CHECK(outcomes[1].sum == 4);
  CHECK(outcomes[3].rank == 0);
  CHECK(outcomes[4].null);
}

TEST_CASE("a split's config pins the new communicator's sockets to an interface",
          "[api][split][config]") {
  ScopedEnv tcp("TUTTI_TRANSPORT", "tcp");  // so that the child's connections are sockets
  ThreadWorld world(3);
  REQUIRE(world.ok());
  tuttiComm_t child = world.comm(0);  // overwritten with NULL by every refusal
  tuttiConfig_t config = TUTTI_CONFIG_INITIALIZER;
  CHECK(tutti_comm_split_config(world.comm(0), 0, 0, nullptr, &child) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("rank 0: config is NULL"));
  CHECK(child == nullptr);
  for (const size_t size : {size_t{4}, sizeof(tuttiConfig_t) + 8}) {
    config.size = size;
    child = world.comm(0);
    CHECK(tutti_comm_split_config(world.comm(0), 0, 0, &config, &child) == tuttiInvalidArgument);
    CHECK_THAT(tutti_get_last_error(), Contains("config.size is " + std::to_string(size)) &&
                                           Contains("start from TUTTI_CONFIG_INITIALIZER"));
    CHECK(child == nullptr);
  }
  config = TUTTI_CONFIG_INITIALIZER;
  config.socket_ifname = "=tutti-no-such-nic";
  CHECK(tutti_comm_split_config(world.comm(0), 0, 0, &config, &child) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(),
             Contains("rank 0: the config's socket_ifname='=tutti-no-such-nic' matches no "
                      "interface") &&
                 Contains("interfaces here: lo"));
  // Every refusal left the parent working. Split it twice: rank 1 opting out with that config
  // (not read: it gets no communicator), then every rank with a config it can honour — rank 2's
  // from a caller that knew only `size` (the interface past it is not read) — and all-reduce over
  // the parent and both children.
  const auto sums = onEveryRank<std::vector<int64_t>>(3, [&](int rank) {
    tuttiConfig_t mine = TUTTI_CONFIG_INITIALIZER;
    mine.socket_ifname = rank == 1 ? "=tutti-no-such-nic" : "=lo";
    tuttiComm_t pair = nullptr, pinned = nullptr;
    const int color = rank == 1 ? TUTTI_SPLIT_NOCOLOR : 0;
    if (tutti_comm_split_config(world.comm(rank), color, rank, &mine, &pair) != tuttiSuccess)
      return std::vector<int64_t>{-1};
    mine.socket_ifname = rank == 2 ? "=tutti-no-such-nic" : "=lo";
    if (rank == 2) mine.size = sizeof(mine.size);
    if (tutti_comm_split_config(world.comm(rank), 0, rank, &mine, &pinned) != tuttiSuccess)
      return std::vector<int64_t>{-2};
    std::vector<int64_t> result;
    for (tuttiComm_t comm : {world.comm(rank), pair, pinned}) {
      if (!comm) continue;  // rank 1's pair
      std::vector<int64_t> data(100000, rank + 1);
      tutti_allreduce(data.data(), data.data(), data.size(), tuttiInt64, tuttiSum, comm, nullptr);
      result.push_back(data.front() + data.back());
    }
    if (pair) tutti_comm_destroy(pair);
    tutti_comm_destroy(pinned);
    return result;
  });
  CHECK(sums == std::vector<std::vector<int64_t>>{{12, 8, 12}, {12, 12}, {12, 8, 12}});
}

TEST_CASE("the C++ API wraps the C ABI", "[api][cpp]") {
  auto comms = tutti::Comm::world(3);
  REQUIRE(comms.size() == 3);
  const auto sums = onEveryRank<double>(3, [&](int rank) {
    tutti::Comm& comm = comms[static_cast<size_t>(rank)];
    std::vector<double> data(10, rank + 1.0), out(10);
    comm.allreduce(data.data(), out.data(), data.size(), tuttiSum);
    // Ring exchange with a group: send to the next rank, receive from the previous.
    int32_t mine = rank * 10, fromPrev = -1;
    {
      tutti::Group group;
      group.send(comm, &mine, 1, (rank + 1) % 3);
      group.recv(comm, &fromPrev, 1, (rank + 2) % 3);
    }
    // Registered arrays: zero-filled, and all-reduced in place (the direct algorithm from
    // 64 KiB; below it the planner's choice).
    for (size_t count : {size_t{10}, size_t{100003}}) {
      tutti::RegisteredArray<double> registered(count);
      if (registered.size() != count || registered[count - 1] != 0.0) return -1.0;
      for (double& x : registered) x = rank + 0.5;
      comm.allreduce(registered.data(), registered.data(), registered.size(), tuttiSum);
      if (registered[0] != 4.5 || registered[count - 1] != 4.5) return -2.0;
    }
    return out[9] * 100 + fromPrev;
  });
  CHECK(sums == std::vector<double>{620, 600, 610});
  try {
    comms[0].allreduce<float>(nullptr, nullptr, 4, tuttiSum);
    FAIL("expected an exception");
  } catch (const tutti::CommError& error) {
    CHECK(error.code() == tuttiInvalidArgument);
    CHECK_THAT(error.what(), Contains("sendbuf is NULL"));
  }
}

TEST_CASE("the all-reduce algorithm can be chosen per communicator", "[api][algorithm]") {
  ThreadWorld world(3);
  REQUIRE(world.ok());
  CHECK(tutti_comm_set_algorithm(world.comm(0), "fastest") == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(),
             Contains("'fastest' is not one of auto, oneshot, ring, tree, doubling, direct"));
  CHECK(tutti_comm_set_algorithm(world.comm(0), nullptr) == tuttiInvalidArgument);
  for (const char* algorithm : {"ring", "tree", "oneshot", "doubling", "direct", "auto"}) {
    const auto sums = onEveryRank<int64_t>(3, [&](int rank) {
      if (tutti_comm_set_algorithm(world.comm(rank), algorithm) != tuttiSuccess) return int64_t{-1};
      std::vector<int64_t> data(100000, rank + 1);
      if (tutti_allreduce(data.data(), data.data(), data.size(), tuttiInt64, tuttiSum,
                          world.comm(rank), nullptr) != tuttiSuccess)
        return int64_t{-1};
      return data[99999];
    });
    CHECK(sums == std::vector<int64_t>{6, 6, 6});
  }
}

TEST_CASE("a group with a failed call reports it at its end and runs nothing", "[api][group]") {
  ThreadWorld world(2);
  REQUIRE(world.ok());
  std::vector<int32_t> data(8, 5), out(8, -1);
  REQUIRE(tutti_group_start() == tuttiSuccess);
  CHECK(tutti_send(data.data(), 8, tuttiInt32, 7, world.comm(0), nullptr) == tuttiInvalidArgument);
  CHECK(tutti_recv(out.data(), 8, tuttiInt32, 0, world.comm(0), nullptr) == tuttiSuccess);
  CHECK(tutti_group_end() == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("the group was not run") && Contains("peer 7"));
  CHECK(out == std::vector<int32_t>(8, -1));
  // The next group is clean.
  const auto received = onEveryRank<int32_t>(2, [&](int rank) {
    int32_t mine = rank + 40, theirs = 0;
    tutti_group_start();
    tutti_send(&mine, 1, tuttiInt32, 1 - rank, world.comm(rank), nullptr);
    tutti_recv(&theirs, 1, tuttiInt32, 1 - rank, world.comm(rank), nullptr);
    return tutti_group_end() == tuttiSuccess ? theirs : -1;
  });
  CHECK(received == std::vector<int32_t>{41, 40});
}

TEST_CASE("asynchronous receives posted before their sends on every rank progress together",
          "[api][p2p][async]") {
  // torch's batch_isend_irecv on a CPU backend: every rank posts its receives, then its sends,
  // each an operation of its own. Run one after another, each rank's first receive would wait
  // for a send queued behind it on the peer. 1 MiB is more than a FIFO holds.
  for (const size_t count : {size_t{1}, size_t{8}, size_t{1} << 18}) {
    ThreadWorld world(3);
    REQUIRE(world.ok());
    const auto wrong = onEveryRank<size_t>(3, [&](int rank) {
      tuttiComm_t comm = world.comm(rank);
      tutti_comm_set_timeout(comm, 20000);  // a deadlock fails well before the test's timeout
      std::vector<std::vector<int32_t>> received(3, std::vector<int32_t>(count, -1));
      std::vector<int32_t> sent(count);
      std::iota(sent.begin(), sent.end(), rank * 1000);
      std::vector<tuttiRequest_t> requests;
      for (int peer = 0; peer < 3; ++peer) {
        if (peer == rank) continue;
        tuttiRequest_t request = nullptr;
        if (tutti_recv(received[static_cast<size_t>(peer)].data(), count, tuttiInt32, peer, comm,
                       &request) != tuttiSuccess)
          return count;
        requests.push_back(request);
        if (tutti_send(sent.data(), count, tuttiInt32, peer, comm, &request) != tuttiSuccess)
          return count;
        requests.push_back(request);
      }
      size_t failed = 0;
      for (tuttiRequest_t request : requests) {
        failed += tutti_wait(request) != tuttiSuccess;
        tutti_request_free(request);
      }
      if (failed > 0) return count;
      size_t mismatches = 0;
      for (int peer = 0; peer < 3; ++peer)
        for (size_t i = 0; peer != rank && i < count; ++i)
          mismatches +=
              received[static_cast<size_t>(peer)][i] != static_cast<int32_t>(peer * 1000 + i);
      return mismatches;
    });
    INFO(count << " elements");
    CHECK(wrong == std::vector<size_t>(3, 0));
  }
}

TEST_CASE("in-place send/recv larger than the connection's buffers keeps the sent data",
          "[api][p2p]") {
  // 4 MiB is twice what a FIFO holds (8 slots of 256 KiB): receiving overwrites the buffer before
  // the send has read all of it unless the runtime holds the receive back or saves the bytes.
  // The receive lands on the send itself (each send keeps a FIFO ahead of its receive), half the
  // message behind its start, or half ahead of it: then every rank's receive waits for a send
  // that waits for the next rank's receive, and the bytes must be saved.
  const size_t count = size_t{1} << 20;
  for (const char* transport : {"shm", "tcp"})
    for (const ptrdiff_t shift : {ptrdiff_t{0}, -ptrdiff_t(count / 2), ptrdiff_t(count / 2)}) {
      ScopedEnv env("TUTTI_TRANSPORT", transport);
      ThreadWorld world(3);
      REQUIRE(world.ok());
      const auto wrong = onEveryRank<size_t>(3, [&](int rank) {
        std::vector<int32_t> buffer(2 * count);
        for (size_t i = 0; i < buffer.size(); ++i)
          buffer[i] = static_cast<int32_t>(rank * 7919 + i);
        int32_t* const sent = buffer.data() + count / 2;
        int32_t* const received = sent + shift;
        const int next = (rank + 1) % 3, previous = (rank + 2) % 3;
        tutti_group_start();
        tutti_send(sent, count, tuttiInt32, next, world.comm(rank), nullptr);
        tutti_recv(received, count, tuttiInt32, previous, world.comm(rank), nullptr);
        if (tutti_group_end() != tuttiSuccess) return count;
        size_t mismatches = 0;
        for (size_t i = 0; i < count; ++i)
          mismatches += received[i] != static_cast<int32_t>(previous * 7919 + count / 2 + i);
        return mismatches;
      });
      INFO(transport << ", receive " << shift << " elements from the send");
      CHECK(wrong == std::vector<size_t>(3, 0));
    }
}

TEST_CASE("TUTTI_CHECK_CALLS names mismatched calls on every rank", "[api][check-calls]") {
  tutti::tests::Warnings().expect();  // mismatched calls are warnings
  ScopedEnv check("TUTTI_CHECK_CALLS", "1");
  ThreadWorld world(3);
  REQUIRE(world.ok());
  // Matching calls run as usual.
  const auto sums = onEveryRank<float>(3, [&](int rank) {
    std::vector<float> data(1024, static_cast<float>(rank));
    tutti_allreduce(data.data(), data.data(), data.size(), tuttiFloat32, tuttiSum, world.comm(rank),
                    nullptr);
    return data[1023];
  });
  CHECK(sums == std::vector<float>{3, 3, 3});
  // Rank 2 disagrees on the count and rank 1 calls another collective: nobody moves data.
  const auto messages = onEveryRank<std::string>(3, [&](int rank) {
    std::vector<float> data(2048, 1.0f);
    tuttiResult_t rc;
    if (rank == 1)
      rc = tutti_broadcast(data.data(), data.data(), 1024, tuttiFloat32, 0, world.comm(rank),
                           nullptr);
    else
      rc = tutti_allreduce(data.data(), data.data(), rank == 2 ? 2048 : 1024, tuttiFloat32,
                           tuttiSum, world.comm(rank), nullptr);
    return rc == tuttiInvalidUsage ? std::string(tutti_get_last_error()) : std::string("no error");
  });
  CHECK_THAT(messages[0],
             Contains("rank 0 called allreduce(count=1024, float32, sum) as call #2; "
                      "rank 1 called broadcast(count=1024, float32, root=0) as call #2"));
  // Rank 2 names its own mismatch, or, where rank 1 gave up first (a busy machine), rank 1's,
  // relayed with its give-up: both name the calls that differ.
  CHECK_THAT(messages[2],
             Contains("rank 2 called allreduce(count=2048, float32, sum) as call #2; "
                      "rank 0 called allreduce(count=1024, float32, sum) as call #2") ||
                 (Contains("rank 1 gave up") &&
                  Contains("its error: rank 1 called broadcast(count=1024, float32, root=0) as "
                           "call #2")));
  CHECK_THAT(messages[1], Contains("rank 1 called broadcast"));
}

TEST_CASE("TUTTI_CHECK_CALLS lets send/recv between some ranks come between collectives",
          "[api][check-calls]") {
  tutti::tests::Warnings().expect();  // mismatched calls are warnings
  ScopedEnv check("TUTTI_CHECK_CALLS", "1");
  ThreadWorld world(3);
  REQUIRE(world.ok());
  // Ranks 0 and 1 exchange messages that rank 2 takes no part in, then all three all-reduce; then
  // rank 2 skips an all-reduce that ranks 0 and 1 make, which the check must catch.
  const auto results = onEveryRank<std::string>(3, [&](int rank) {
    std::vector<int32_t> message(16, rank);
    if (rank < 2) {
      for (int round = 0; round < 3; ++round) {
        const tuttiResult_t rc =
            rank == 0 ? tutti_send(message.data(), 16, tuttiInt32, 1, world.comm(0), nullptr)
                      : tutti_recv(message.data(), 16, tuttiInt32, 0, world.comm(1), nullptr);
        if (rc != tuttiSuccess) return std::string("p2p: ") + tutti_get_last_error();
      }
    }
    std::vector<float> data(1024, 1.0f);
    if (tutti_allreduce(data.data(), data.data(), data.size(), tuttiFloat32, tuttiSum,
                        world.comm(rank), nullptr) != tuttiSuccess)
      return std::string("allreduce: ") + tutti_get_last_error();
    if (data[1023] != 3.0f) return std::string("wrong sum");
    if (rank < 2)
      tutti_allreduce(data.data(), data.data(), data.size(), tuttiFloat32, tuttiSum,
                      world.comm(rank), nullptr);
    std::vector<float> gathered(3 * 8);
    const tuttiResult_t rc =
        tutti_allgather(data.data(), gathered.data(), 8, tuttiFloat32, world.comm(rank), nullptr);
    return rc == tuttiInvalidUsage ? std::string(tutti_get_last_error()) : std::string("no error");
  });
  CHECK_THAT(results[2], Contains("rank 2 called allgather(count=8, float32) as call #2; rank 0 "
                                  "called allreduce(count=1024, float32, sum) as call #5 "
                                  "(collective #2)"));
  CHECK_THAT(results[0], Contains("rank 0 called allreduce(count=1024, float32, sum) as call #5 "
                                  "(collective #2); rank 2 called allgather(count=8, float32) as "
                                  "call #2"));
  CHECK_THAT(results[1], Contains("rank 1 called allreduce(count=1024, float32, sum) as call #5 "
                                  "(collective #2); rank 2 called allgather"));
}

TEST_CASE("TUTTI_CHECK_CALLS names algorithms set differently on the ranks", "[api][check-calls]") {
  tutti::tests::Warnings().expect();  // mismatched calls are warnings
  ScopedEnv check("TUTTI_CHECK_CALLS", "1");
  ThreadWorld world(3);
  REQUIRE(world.ok());
  const auto messages = onEveryRank<std::string>(3, [&](int rank) {
    if (tutti_comm_set_algorithm(world.comm(rank), rank == 1 ? "tree" : "ring") != tuttiSuccess)
      return std::string("set_algorithm failed");
    std::vector<float> data(1024, 1.0f);
    const tuttiResult_t rc = tutti_allreduce(data.data(), data.data(), data.size(), tuttiFloat32,
                                             tuttiSum, world.comm(rank), nullptr);
    return rc == tuttiInvalidUsage ? std::string(tutti_get_last_error()) : std::string("no error");
  });
  // Each rank names the mismatch: as it found it, or as a rank that found it first said in its
  // departure note ("rank K ... gave up ...; its error: rank K runs ... by ring; rank 1 by tree").
  for (const std::string& message : messages)
    CHECK_THAT(message, Contains("runs allreduce(count=1024, float32, sum) as call #1 by ") &&
                            Contains(" by tree") && Contains(" by ring") &&
                            Contains("the ranks were given different algorithms "
                                     "(tutti_comm_set_algorithm)"));
}
