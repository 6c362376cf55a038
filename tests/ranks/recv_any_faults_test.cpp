// Receives from any source (tutti_recv_any) that cannot succeed, with worlds of ranks as threads
// and, for a dead peer, as processes: bad arguments change nothing; a size mismatch, a timeout, a
// peer that gave up or died fail naming what went wrong; peers that left are passed over, and
// once all have left the receive fails saying so.
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "tests/warnings.hpp"
#include "tutti/tutti.h"
#include "world.hpp"

using namespace tutti::testing;
using Catch::Matchers::Contains;

TEST_CASE("a receive from any source refuses bad arguments and changes nothing",
          "[recv-any][bad-input]") {
  ThreadWorld world(2);
  REQUIRE(world.ok());
  tuttiComm_t comm = world.comm(0);
  std::vector<int32_t> buffer(8, 7);
  int source = -5;
  CHECK(tutti_recv_any(buffer.data(), 0, tuttiInt32, &source, comm, nullptr) ==
        tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("rank 0: recv_any #1") && Contains("count 0"));
  CHECK(tutti_recv_any(buffer.data(), 8, tuttiInt32, nullptr, comm, nullptr) ==
        tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("recv_any #1: source is NULL"));
  CHECK(tutti_recv_any(nullptr, 8, tuttiInt32, &source, comm, nullptr) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("recvbuf is NULL"));
  CHECK(tutti_recv_any(buffer.data(), 8, static_cast<tuttiDataType_t>(42), &source, comm,
                       nullptr) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("invalid data type 42"));
  CHECK(tutti_recv_any(buffer.data(), 8, tuttiInt32, &source, nullptr, nullptr) ==
        tuttiInvalidArgument);
  tuttiRequest_t request = reinterpret_cast<tuttiRequest_t>(&buffer);
  CHECK(tutti_recv_any(buffer.data(), 0, tuttiInt32, &source, comm, &request) ==
        tuttiInvalidArgument);
  CHECK(request == nullptr);
  CHECK(buffer == std::vector<int32_t>(8, 7));
  CHECK(source == -5);
  // A plain receive still refuses a negative peer.
  CHECK(tutti_recv(buffer.data(), 8, tuttiInt32, -1, comm, nullptr) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("peer -1 is out of range"));
  // One rank has nobody to receive from.
  tuttiComm_t alone = nullptr;
  REQUIRE(tutti_comm_init_all(&alone, 1) == tuttiSuccess);
  CHECK(tutti_recv_any(buffer.data(), 8, tuttiInt32, &source, alone, nullptr) ==
        tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("no other rank"));
  tutti_comm_destroy(alone);
  // The communicator is still usable.
  const auto sources = onEveryRank<int>(2, [&](int rank) {
    int32_t value = 40 + rank;
    int from = -1;
    if (rank == 1)
      return tutti_send(&value, 1, tuttiInt32, 0, world.comm(1), nullptr) == 0 ? 1 : -1;
    if (tutti_recv_any(&value, 1, tuttiInt32, &from, world.comm(0), nullptr) != tuttiSuccess)
      return -1;
    return value == 41 ? from : -1;
  });
  CHECK(sources == std::vector<int>{1, 1});
}

TEST_CASE("a receive from any source fails on a size mismatch, a timeout or a peer that gave up",
          "[recv-any][faults]") {
  tutti::tests::Warnings().expect();  // failures on purpose
  for (const std::string transport : {"shm", "tcp"}) {
    INFO("over " << transport);
    ScopedEnv forceTransport("TUTTI_TRANSPORT", transport);
    {
      ThreadWorld world(2);
      REQUIRE(world.ok());
      const auto messages = onEveryRank<std::string>(2, [&](int rank) -> std::string {
        std::vector<int32_t> buffer(16, 3);
        int source = -1;
        if (rank == 1) {
          tutti_send(buffer.data(), 8, tuttiInt32, 0, world.comm(1), nullptr);
          return "";
        }
        if (tutti_recv_any(buffer.data(), 16, tuttiInt32, &source, world.comm(0), nullptr) !=
            tuttiInvalidUsage)
          return "no mismatch found";
        return tutti_get_last_error();
      });
      CHECK_THAT(messages[0], Contains("rank 0: send/recv #1") &&
                                  Contains("rank 1 sent 32 bytes where 64 were expected"));
    }
    {
      ThreadWorld world(3);
      REQUIRE(world.ok());
      tutti_comm_set_timeout(world.comm(0), 300);
      int32_t value = 0;
      int source = -1;
      CHECK(tutti_recv_any(&value, 1, tuttiInt32, &source, world.comm(0), nullptr) == tuttiTimeout);
      CHECK_THAT(tutti_get_last_error(),
                 Contains("rank 0: send/recv #1") && Contains("waiting for data from any rank"));
    }
    {
      ThreadWorld world(3);
      REQUIRE(world.ok());
      // Rank 2 aborts while rank 0 waits for any source: rank 0 fails, naming rank 2.
      std::atomic<bool> waiting{false};
      const auto messages = onEveryRank<std::string>(3, [&](int rank) -> std::string {
        if (rank == 1) return "";
        if (rank == 2) {
          while (!waiting) std::this_thread::yield();
          tutti_comm_abort(world.comm(2));
          return "";
        }
        int32_t value = 0;
        int source = -1;
        tutti_comm_set_timeout(world.comm(0), 30000);
        waiting = true;
        if (tutti_recv_any(&value, 1, tuttiInt32, &source, world.comm(0), nullptr) == tuttiSuccess)
          return "received";
        return tutti_get_last_error();
      });
      CHECK_THAT(messages[0],
                 Contains("rank 0: send/recv #1") && Contains("rank 2") && Contains("abort"));
    }
  }
}

TEST_CASE("a receive from any source takes a message after other peers have left", "[recv-any]") {
  // Over tcp a peer that destroyed its communicator has closed its connections: a receive from
  // any source passes over it and takes the message of the peer still sending; once every other
  // rank has left it fails, saying so.
  tutti::tests::Warnings().expect();  // the failure once every other rank has left
  for (const std::string transport : {"shm", "tcp"}) {
    INFO("over " << transport);
    ScopedEnv forceTransport("TUTTI_TRANSPORT", transport);
    std::vector<tuttiComm_t> comms(3, nullptr);
    REQUIRE(tutti_comm_init_all(comms.data(), 3) == tuttiSuccess);
    std::atomic<bool> gone{false}, allGone{false};
    const auto problems = onEveryRank<std::string>(3, [&](int rank) -> std::string {
      tuttiComm_t comm = comms[size_t(rank)];
      int32_t value = 50 + rank;
      if (rank == 2) {
        tutti_comm_destroy(comm);
        gone = true;
        return "";
      }
      if (rank == 1) {
        while (!gone) std::this_thread::yield();
        const tuttiResult_t sent = tutti_send(&value, 1, tuttiInt32, 0, comm, nullptr);
        tutti_comm_destroy(comm);
        allGone = true;
        return sent == tuttiSuccess ? "" : tutti_get_last_error();
      }
      tutti_comm_set_timeout(comm, 30000);
      int source = -1;
      std::string problem;
      if (tutti_recv_any(&value, 1, tuttiInt32, &source, comm, nullptr) != tuttiSuccess)
        problem = tutti_get_last_error();
      else if (source != 1 || value != 51)
        problem = fmt::format("received {} from rank {}", value, source);
      // Shared memory does not tell a rank that left from one yet to send: that waits for the
      // timeout, like a receive from one peer that left.
      while (transport == "tcp" && problem.empty() && !allGone) std::this_thread::yield();
      if (transport == "tcp" && problem.empty() &&
          tutti_recv_any(&value, 1, tuttiInt32, &source, comm, nullptr) == tuttiSuccess)
        problem = "received after every other rank left";
      else if (transport == "tcp" && problem.empty() &&
               std::string(tutti_get_last_error()).find("every other rank has left") ==
                   std::string::npos)
        problem = tutti_get_last_error();
      tutti_comm_destroy(comm);
      return problem;
    });
    CHECK(problems == std::vector<std::string>(3, ""));
  }
}

TEST_CASE("a receive from any source fails soon, naming a peer process that died",
          "[recv-any][faults]") {
  // Ranks 1 and 2 are child processes, forked before this process starts any tutti thread; rank
  // 1 dies (SIGKILL) once initialised, rank 2 lives on until the end. Rank 0, receiving from any
  // source, must name rank 1 long before TUTTI_TIMEOUT (60 s).
  tutti::tests::Warnings().expect();
  for (const std::string transport : {"shm", "tcp"}) {
    INFO("over " << transport);
    ScopedEnv forceTransport("TUTTI_TRANSPORT", transport);
    ScopedEnv timeout("TUTTI_TIMEOUT", "60");
    std::vector<pid_t> children;
    std::vector<int> idPipes;
    for (int rank = 1; rank <= 2; ++rank) {
      int ends[2];
      REQUIRE(pipe(ends) == 0);
      const pid_t pid = fork();
      REQUIRE(pid >= 0);
      if (pid == 0) {
        close(ends[1]);
        tuttiUniqueId id;
        if (read(ends[0], &id, sizeof id) != static_cast<ssize_t>(sizeof id)) _exit(1);
        tuttiComm_t comm = nullptr;
        if (tutti_comm_init_rank(&comm, id, rank, 3) != tuttiSuccess) _exit(1);
        if (rank == 1) raise(SIGKILL);
        char byte;
        while (read(ends[0], &byte, 1) > 0) {
        }
        _exit(0);  // without a word, once the parent closes the pipe
      }
      close(ends[0]);
      children.push_back(pid);
      idPipes.push_back(ends[1]);
    }
    tuttiUniqueId id;
    REQUIRE(tutti_get_unique_id(&id) == tuttiSuccess);
    for (int fd : idPipes) REQUIRE(write(fd, &id, sizeof id) == static_cast<ssize_t>(sizeof id));
    tuttiComm_t comm = nullptr;
    REQUIRE(tutti_comm_init_rank(&comm, id, 0, 3) == tuttiSuccess);
    int32_t value = 0;
    int source = -1;
    const auto start = std::chrono::steady_clock::now();
    CHECK(tutti_recv_any(&value, 1, tuttiInt32, &source, comm, nullptr) == tuttiRemoteError);
    const std::string message = tutti_get_last_error();
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
    // Over tcp its closed socket may tell first, as it does any receive.
    CHECK_THAT(message, Contains("rank 0: send/recv #1") && Contains("rank 1 (") &&
                            (Contains("is gone") || Contains("closed the connection")));
    for (int fd : idPipes) close(fd);
    for (pid_t pid : children) waitpid(pid, nullptr, 0);
    tutti_comm_destroy(comm);
  }
}
