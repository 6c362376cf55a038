// Receives from any source (tutti_recv_any) with worlds of ranks as threads over each transport:
// several senders with seeded random sizes, each message's source, order and content checked
// against what its sender sent; receives from one peer around them undisturbed; MPI's matching
// order (a receive from any source takes a message before receives issued after it); messages of
// other peers and other calls left for the receives they belong to; senders whose messages wait
// together taken in turn; the C++ API. What cannot succeed: recv_any_faults_test.cpp.
#include <fmt/format.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "in_process_transport.hpp"
#include "tutti/tutti.hpp"
#include "world.hpp"

using namespace tutti::testing;
using Catch::Matchers::Contains;

namespace {

// Every transport, the tests' own in-process one included (registered here).
std::vector<std::string> transports() {
  registerInProcessTransport();
#ifdef TUTTI_HAVE_UCX
  return {"shm", "tcp", "in-process", "ucx"};
#else
  return {"shm", "tcp", "in-process"};
#endif
}

// Element j of message `index` from `sender`: computed again by the receiver, independently.
int32_t valueOf(uint64_t seed, int sender, int index, size_t j) {
  return static_cast<int32_t>(seed * 1000003 + static_cast<uint64_t>(sender) * 7919 +
                              static_cast<uint64_t>(index) * 104729 + j);
}

std::vector<int32_t> messageOf(uint64_t seed, int sender, int index, size_t count) {
  std::vector<int32_t> message(count);
  for (size_t j = 0; j < count; ++j) message[j] = valueOf(seed, sender, index, j);
  return message;
}

// The element counts of a sender's messages, from (seed, sender): up to 2^17 int32 (512 KiB, four
// 128 KiB slots), at least 1.
std::vector<size_t> countsOf(uint64_t seed, int sender, int messages) {
  std::mt19937_64 rng(seed * 31 + static_cast<uint64_t>(sender));
  std::vector<size_t> counts;
  for (int i = 0; i < messages; ++i)
    counts.push_back(size_t{1} << std::uniform_int_distribution<int>(0, 17)(rng));
  for (size_t& count : counts) count += std::uniform_int_distribution<size_t>(0, count)(rng);
  return counts;
}

}  // namespace

TEST_CASE("receives from any source take each sender's messages whole and in order", "[recv-any]") {
  // Each sender sends a header {sender, index, count} and then a body of `count` elements; rank 0
  // takes headers from any source and each body from the header's source, so that receives from
  // any source and from one peer interleave while the other senders' messages wait.
  constexpr int kRanks = 4, kMessages = 5;
  ScopedEnv quiet("UCX_WARN_UNUSED_ENV_VARS", "n");
  for (const std::string& transport : transports()) {
    const uint64_t seed = 11 + transport.size();
    INFO("over " << transport << ", seed " << seed);
    ScopedEnv forceTransport("TUTTI_TRANSPORT", transport);
    ThreadWorld world(kRanks);
    REQUIRE(world.ok());
    const uint64_t inProcessBefore = inProcessMessages();
    const auto problems = onEveryRank<std::string>(kRanks, [&](int rank) -> std::string {
      tuttiComm_t comm = world.comm(rank);
      tutti_comm_set_timeout(comm, 30000);  // a hang fails well before the test's timeout
      if (rank > 0) {
        const std::vector<size_t> counts = countsOf(seed, rank, kMessages);
        for (int i = 0; i < kMessages; ++i) {
          const int64_t header[3] = {rank, i, static_cast<int64_t>(counts[size_t(i)])};
          const std::vector<int32_t> body = messageOf(seed, rank, i, counts[size_t(i)]);
          if (tutti_send(header, 3, tuttiInt64, 0, comm, nullptr) != tuttiSuccess ||
              tutti_send(body.data(), body.size(), tuttiInt32, 0, comm, nullptr) != tuttiSuccess)
            return tutti_get_last_error();
        }
        return "";
      }
      std::vector<int> next(kRanks, 0);  // the index each sender's next message must have
      std::string problems;
      for (int k = 0; k < (kRanks - 1) * kMessages; ++k) {
        int64_t header[3] = {-1, -1, -1};
        int source = -1;
        if (tutti_recv_any(header, 3, tuttiInt64, &source, comm, nullptr) != tuttiSuccess)
          return tutti_get_last_error();
        if (source < 1 || source >= kRanks || header[0] != source ||
            header[1] != next[size_t(source)])
          return fmt::format("receive {}: source {}, header {{{}, {}, {}}}", k, source, header[0],
                             header[1], header[2]);
        const int index = next[size_t(source)]++;
        const size_t count = countsOf(seed, source, kMessages)[size_t(index)];
        if (header[2] != static_cast<int64_t>(count))
          return fmt::format("message {} of rank {} says {} elements, not {}", index, source,
                             header[2], count);
        std::vector<int32_t> body(count, -1);
        if (tutti_recv(body.data(), count, tuttiInt32, source, comm, nullptr) != tuttiSuccess)
          return tutti_get_last_error();
        if (body != messageOf(seed, source, index, count))
          problems += fmt::format("message {} of rank {} differs; ", index, source);
      }
      return problems;
    });
    CHECK(problems == std::vector<std::string>(kRanks, ""));
    // The in-process world's data went over that transport, not one the runtime knows by name.
    CHECK((transport != "in-process" || inProcessMessages() > inProcessBefore));
  }
}

TEST_CASE("receives from any source of large messages take one sender's message each",
          "[recv-any]") {
  // Rounds separated by a barrier: in each, every sender sends one message of the round's size
  // (up to 1 MiB, more than a FIFO holds, so senders wait for the receiver) and rank 0 receives
  // as many from any source. A sender done with its message enters the barrier, whose message
  // then waits at the head of its connection while rank 0 still receives from the others.
  constexpr int kRanks = 3, kRounds = 3;
  for (const std::string transport : {"shm", "tcp"}) {
    const uint64_t seed = 29;
    INFO("over " << transport << ", seed " << seed);
    ScopedEnv forceTransport("TUTTI_TRANSPORT", transport);
    ThreadWorld world(kRanks);
    REQUIRE(world.ok());
    std::mt19937_64 rng(seed);
    std::vector<size_t> counts;
    for (int round = 0; round < kRounds; ++round)
      counts.push_back(std::uniform_int_distribution<size_t>(1, size_t{1} << 18)(rng));
    const auto problems = onEveryRank<std::string>(kRanks, [&](int rank) -> std::string {
      tuttiComm_t comm = world.comm(rank);
      tutti_comm_set_timeout(comm, 30000);
      std::string problems;
      for (int round = 0; round < kRounds; ++round) {
        const size_t count = counts[size_t(round)];
        if (rank > 0) {
          const std::vector<int32_t> message = messageOf(seed, rank, round, count);
          if (tutti_send(message.data(), count, tuttiInt32, 0, comm, nullptr) != tuttiSuccess)
            return tutti_get_last_error();
        } else {
          std::vector<bool> seen(kRanks, false);
          for (int k = 1; k < kRanks; ++k) {
            std::vector<int32_t> message(count, -1);
            int source = -1;
            if (tutti_recv_any(message.data(), count, tuttiInt32, &source, comm, nullptr) !=
                tuttiSuccess)
              return tutti_get_last_error();
            if (source < 1 || source >= kRanks || seen[size_t(source)])
              return fmt::format("round {}: source {} (again?)", round, source);
            seen[size_t(source)] = true;
            if (message != messageOf(seed, source, round, count))
              problems += fmt::format("round {}: rank {}'s message differs; ", round, source);
          }
        }
        if (tutti_barrier(comm, nullptr) != tuttiSuccess) return tutti_get_last_error();
      }
      return problems;
    });
    CHECK(problems == std::vector<std::string>(kRanks, ""));
  }
}

TEST_CASE("a receive from any source matches before the receives issued after it", "[recv-any]") {
  // Rank 0 posts a receive from any source, then one from rank 1, then sends rank 1 the go-ahead
  // (all asynchronous: they progress together). Rank 1 then sends two messages, and nobody else
  // sends: the first goes to the receive from any source, the second to the one from rank 1, as
  // in MPI. Rank 2's message, sent once rank 0 says so, is the next receive from any source's.
  for (const std::string transport : {"shm", "tcp"}) {
    INFO("over " << transport);
    ScopedEnv forceTransport("TUTTI_TRANSPORT", transport);
    ThreadWorld world(3);
    REQUIRE(world.ok());
    const auto problems = onEveryRank<std::string>(3, [&](int rank) -> std::string {
      tuttiComm_t comm = world.comm(rank);
      tutti_comm_set_timeout(comm, 30000);
      int32_t go = 1;
      const std::vector<int32_t> first(100, 10 * rank + 1), second(100, 10 * rank + 2);
      if (rank > 0) {
        if (tutti_recv(&go, 1, tuttiInt32, 0, comm, nullptr) != tuttiSuccess ||
            tutti_send(first.data(), 100, tuttiInt32, 0, comm, nullptr) != tuttiSuccess ||
            (rank == 1 &&
             tutti_send(second.data(), 100, tuttiInt32, 0, comm, nullptr) != tuttiSuccess))
          return tutti_get_last_error();
        return "";
      }
      std::vector<int32_t> fromAny(100, -1), fromOne(100, -1), fromAnyAgain(100, -1);
      int source = -1, sourceAgain = -1;
      tuttiRequest_t requests[3] = {};
      if (tutti_recv_any(fromAny.data(), 100, tuttiInt32, &source, comm, &requests[0]) !=
              tuttiSuccess ||
          tutti_recv(fromOne.data(), 100, tuttiInt32, 1, comm, &requests[1]) != tuttiSuccess ||
          tutti_send(&go, 1, tuttiInt32, 1, comm, &requests[2]) != tuttiSuccess)
        return tutti_get_last_error();
      for (tuttiRequest_t request : requests)
        if (tutti_request_free(request) != tuttiSuccess) return tutti_get_last_error();
      if (tutti_send(&go, 1, tuttiInt32, 2, comm, nullptr) != tuttiSuccess ||
          tutti_recv_any(fromAnyAgain.data(), 100, tuttiInt32, &sourceAgain, comm, nullptr) !=
              tuttiSuccess)
        return tutti_get_last_error();
      if (source != 1 || fromAny != std::vector<int32_t>(100, 11) ||
          fromOne != std::vector<int32_t>(100, 12) || sourceAgain != 2 ||
          fromAnyAgain != std::vector<int32_t>(100, 21))
        return fmt::format("from any: rank {} sent {}; from rank 1: {}; again: rank {} sent {}",
                           source, fromAny[0], fromOne[0], sourceAgain, fromAnyAgain[0]);
      return "";
    });
    CHECK(problems == std::vector<std::string>(3, ""));
  }
}

TEST_CASE("receives from any source take waiting senders in turn", "[recv-any]") {
  // Ranks 1-3 each send two messages and say so (a send returns once its data has left the
  // process); only then does rank 0 receive six from any source: each sender's first, in rank
  // order from the rank after rank 0, then each one's second. Looking from rank 1 every time
  // would take rank 1's two first and keep the others waiting behind it.
  for (const std::string transport : {"shm", "tcp", "in-process"}) {
    INFO("over " << transport);
    registerInProcessTransport();
    ScopedEnv forceTransport("TUTTI_TRANSPORT", transport);
    ThreadWorld world(4);
    REQUIRE(world.ok());
    std::atomic<int> sent{0};
    const auto order = onEveryRank<std::vector<int32_t>>(4, [&](int rank) {
      tuttiComm_t comm = world.comm(rank);
      tutti_comm_set_timeout(comm, 30000);
      std::vector<int32_t> got;
      if (rank > 0) {
        for (int32_t i = 0; i < 2; ++i) {
          const int32_t value = 10 * rank + i;
          if (tutti_send(&value, 1, tuttiInt32, 0, comm, nullptr) != tuttiSuccess)
            got.push_back(-1);
        }
        ++sent;
        return got;
      }
      while (sent < 3) std::this_thread::yield();
      for (int k = 0; k < 6; ++k) {
        int32_t value = -1;
        int source = -1;
        if (tutti_recv_any(&value, 1, tuttiInt32, &source, comm, nullptr) != tuttiSuccess)
          return std::vector<int32_t>{-1};
        got.push_back(source == value / 10 ? value : -value);
      }
      return got;
    });
    CHECK(order[0] == std::vector<int32_t>{10, 20, 30, 11, 21, 31});
    for (int rank = 1; rank < 4; ++rank) CHECK(order[size_t(rank)].empty());
  }
}

TEST_CASE("a message a receive from any source did not take stays for a receive from its sender",
          "[recv-any]") {
  // Ranks 1 and 2 each send one message; rank 0 receives one from any source, then one from the
  // other rank: that one arrives intact whichever the first took. Inside a group, a receive
  // from any source pairs with the sends issued with it.
  for (const std::string transport : {"shm", "tcp"}) {
    INFO("over " << transport);
    ScopedEnv forceTransport("TUTTI_TRANSPORT", transport);
    ThreadWorld world(3);
    REQUIRE(world.ok());
    const auto problems = onEveryRank<std::string>(3, [&](int rank) -> std::string {
      tuttiComm_t comm = world.comm(rank);
      tutti_comm_set_timeout(comm, 30000);
      const size_t count = 70001;  // more than a slot
      if (rank > 0) {
        const std::vector<int32_t> message = messageOf(5, rank, 0, count);
        if (tutti_send(message.data(), count, tuttiInt32, 0, comm, nullptr) != tuttiSuccess)
          return tutti_get_last_error();
      } else {
        std::vector<int32_t> first(count), second(count);
        int source = -1;
        if (tutti_recv_any(first.data(), count, tuttiInt32, &source, comm, nullptr) != tuttiSuccess)
          return tutti_get_last_error();
        if (source != 1 && source != 2) return fmt::format("source {}", source);
        const int other = 3 - source;
        if (tutti_recv(second.data(), count, tuttiInt32, other, comm, nullptr) != tuttiSuccess)
          return tutti_get_last_error();
        if (first != messageOf(5, source, 0, count) || second != messageOf(5, other, 0, count))
          return fmt::format("the messages of ranks {} and {} differ", source, other);
      }
      // Group: rank r sends r to rank (r + 1) % 3 and receives from any source.
      int32_t mine = rank, theirs = -1;
      int source = -1;
      tutti_group_start();
      tutti_recv_any(&theirs, 1, tuttiInt32, &source, comm, nullptr);
      tutti_send(&mine, 1, tuttiInt32, (rank + 1) % 3, comm, nullptr);
      if (tutti_group_end() != tuttiSuccess) return tutti_get_last_error();
      if (source != (rank + 2) % 3 || theirs != source)
        return fmt::format("group: received {} from rank {}", theirs, source);
      return "";
    });
    CHECK(problems == std::vector<std::string>(3, ""));
  }
}

TEST_CASE("the C++ API receives from any source and returns the sender", "[recv-any][cpp]") {
  auto comms = tutti::Comm::world(2);
  const auto received = onEveryRank<int>(2, [&](int rank) {
    int32_t value = 40 + rank;
    if (rank == 1) {
      tutti::Group group;
      group.send(comms[1], &value, 1, 0);
      return 1;
    }
    const int from = comms[0].recvAny(&value, 1);
    return from == 1 && value == 41 ? 1 : 0;
  });
  CHECK(received == std::vector<int>{1, 1});
  try {
    comms[0].recvAny<int32_t>(nullptr, 0);
    FAIL("expected an exception");
  } catch (const tutti::CommError& error) {
    CHECK(error.code() == tuttiInvalidArgument);
    CHECK_THAT(error.what(), Contains("count 0"));
  }
}
