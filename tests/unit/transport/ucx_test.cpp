// ucx only (tag [ucx]; meson runs these under UCX_TLS=tcp and under UCX's shared-memory
// transports): the stream of exact bytes in order, flow control by credits, a peer that leaves,
// addresses UCX cannot use, the wake-up descriptor.
#include <poll.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <functional>
#include <thread>

#include "world.hpp"

namespace tutti::transport::test {
namespace {

using std::chrono::seconds;

std::vector<std::unique_ptr<Transport>> connectedPair(const Options& options0,
                                                      const Options& options1) {
  std::vector<std::unique_ptr<Transport>> world;
  world.push_back(makeUcxTransport(options0));
  world.push_back(makeUcxTransport(options1));
  connectAll(world, Deadline::after(seconds(20)));
  return world;
}

// Posts one message of `bytes` bytes filled with `fill`; false when no slot is free.
bool tryPost(Transport& from, int to, size_t bytes, char fill) {
  void* slot = from.send(to).tryAcquire();
  if (!slot) return false;
  std::memset(slot, fill, bytes);
  from.send(to).post(bytes, {{static_cast<uint64_t>(fill), 2, 3}});
  return true;
}

// The next message from `from`, progressing both ends until it is there (or the deadline).
const void* awaitPeek(std::vector<std::unique_ptr<Transport>>& world, int at, int from,
                      Envelope* got) {
  const Deadline deadline = Deadline::after(seconds(10));
  const void* data = nullptr;
  while (!(data = world[at]->recv(from).tryPeek(got)) && !deadline.expired())
    for (auto& t : world)
      if (t) t->progress();
  return data;
}

// What UCX prints (to stdout, its default log file, or stderr) while `body` runs.
std::string ucxOutputDuring(const std::function<void()>& body) {
  std::fflush(nullptr);
  const std::unique_ptr<FILE, int (*)(FILE*)> capture(std::tmpfile(), std::fclose);
  REQUIRE(capture);
  const int saved[2] = {dup(1), dup(2)};
  dup2(fileno(capture.get()), 1);
  dup2(fileno(capture.get()), 2);
  body();
  std::fflush(nullptr);
  for (int fd : {1, 2}) {
    dup2(saved[fd - 1], fd);
    close(saved[fd - 1]);
  }
  std::string text(static_cast<size_t>(lseek(fileno(capture.get()), 0, SEEK_END)), '\0');
  pread(fileno(capture.get()), text.data(), text.size(), 0);
  return text;
}

}  // namespace

// UCX 1.13 warns of a transport setting that no transport it opened used: tutti asks for the
// shared-memory transports' peer error handling only where UCX_TLS lets them open.
TEST_CASE("ucx: UCX warns of nothing tutti configured", "[ucx]") {
  const std::string printed = ucxOutputDuring([] {
    auto options = worldOptions(2);
    auto world = connectedPair(options[0], options[1]);
  });
  CHECK_THAT(printed, !Catch::Contains("WARN"));
}

// Fewer messages than stream_test.cpp's: each UCX context costs threads and time (CI time).
TEST_CASE("ucx: a full mesh of thread ranks streams exact bytes in order", "[ucx]") {
  const int nranks = GENERATE(2, 3);
  SECTION("4 slots of 4 KiB") {
    streamWorld(Kind::kUcx, worldOptions(nranks), 600, 42 + nranks);
  }
  SECTION("odd slot size, 3 slots") {
    auto options = worldOptions(nranks);
    for (Options& o : options) {
      o.slotBytes = 1000;
      o.slots = 3;
    }
    streamWorld(Kind::kUcx, options, 400, 7);
  }
  SECTION("one slot of 64 KiB") {
    auto options = worldOptions(nranks);
    for (Options& o : options) {
      o.slotBytes = 64 << 10;
      o.slots = 1;
    }
    streamWorld(Kind::kUcx, options, 100, 9);
  }
}

TEST_CASE("ucx: connection calls check their use", "[ucx]") {
  checkConnectionCalls(Kind::kUcx);
}

TEST_CASE("ucx: bad options and peer lists are rejected", "[ucx]") {
  checkBadInputRejected(Kind::kUcx);
}

// Without RDMA ports the sender's request completes once UCX has the bytes, whether or not the
// receiver progresses; with them, UCX's rendezvous waits for the receiver's answer.
TEST_CASE("ucx: messages go eagerly without RDMA ports, by rendezvous with them", "[ucx]") {
  const int rdmaPorts = GENERATE(0, 1);
  auto options = worldOptions(2);
  for (Options& o : options) {
    o.slotBytes = 32 << 10;  // above UCX's 8 KiB rendezvous threshold
    o.slots = 2;
    o.rdmaPorts = rdmaPorts;
  }
  auto world = connectedPair(options[0], options[1]);
  REQUIRE(tryPost(*world[0], 1, 32 << 10, 'x'));
  const Deadline deadline = Deadline::after(seconds(rdmaPorts ? 1 : 10));
  while (world[0]->sendsPending() && !deadline.expired()) world[0]->progress();
  CHECK(world[0]->sendsPending() == (rdmaPorts > 0));
  Envelope got;
  const void* data = awaitPeek(world, 1, 0, &got);
  REQUIRE(data != nullptr);
  CHECK(got.bytes == 32 << 10);
  CHECK(static_cast<const char*>(data)[(32 << 10) - 1] == 'x');
  world[1]->recv(0).release();
  leaveTogether(world);
}

// Over UCX's tcp this failed now and then under load ("receiving from rank 0 failed: Endpoint
// timeout", 1 run in 50-150 with two CPU hogs beside it): rank 0 closed its endpoint once its
// last rendezvous send had completed on its side, before rank 1 had taken the message. RDMA
// ports are claimed so that UCX keeps its rendezvous, as it would on such a host.
TEST_CASE("ucx: slots of 1 MiB go by rendezvous, exact and in order", "[ucx]") {
  auto options = worldOptions(2);
  for (Options& o : options) {
    o.slotBytes = 1 << 20;
    o.slots = 2;
    o.rdmaPorts = 1;
  }
  streamWorld(Kind::kUcx, options, 20, 11);
}

TEST_CASE("ucx: a sender never has more than `slots` messages in flight", "[ucx]") {
  auto options = worldOptions(2);
  for (Options& o : options) o.slots = 4;
  auto world = connectedPair(options[0], options[1]);
  for (char i = 0; i < 4; ++i) REQUIRE(tryPost(*world[0], 1, 100, 'a' + i));
  // However long both ends progress, the fifth waits for the receiver to release slots.
  for (int round = 0; round < 2000; ++round) {
    world[0]->progress();
    world[1]->progress();
  }
  CHECK(world[0]->send(1).tryAcquire() == nullptr);
  // Two releases (half the slots) send a credit: two slots free up, in order.
  for (char i = 0; i < 2; ++i) {
    Envelope got;
    const void* data = awaitPeek(world, 1, 0, &got);
    REQUIRE(data != nullptr);
    CHECK(got.bytes == 100);
    CHECK(got.tag == Tag{{static_cast<uint64_t>('a' + i), 2, 3}});
    CHECK(static_cast<const char*>(data)[99] == 'a' + i);
    world[1]->recv(0).release();
  }
  const Deadline deadline = Deadline::after(seconds(10));
  int posted = 0;
  while (posted < 2 && !deadline.expired()) {
    posted += tryPost(*world[0], 1, 100, static_cast<char>('e' + posted));
    world[0]->progress();
    world[1]->progress();
  }
  CHECK(posted == 2);
  CHECK(world[0]->send(1).tryAcquire() == nullptr);
  for (char expected : {'c', 'd', 'e', 'f'}) {
    Envelope got;
    const void* data = awaitPeek(world, 1, 0, &got);
    REQUIRE(data != nullptr);
    CHECK(static_cast<const char*>(data)[0] == expected);
    world[1]->recv(0).release();
  }
  leaveTogether(world);
}

// [peer-failure]: only where UCX's transports report a peer that leaves at once (UCX_TLS=tcp here;
// the shared-memory ones notice at keepalive rounds, never for a peer in this process).
TEST_CASE("ucx: a peer that leaves is named by the survivor", "[ucx][peer-failure]") {
  auto options = worldOptions(2);
  auto world = connectedPair(options[0], options[1]);
  const std::string place = world[1]->localAddress().substr(0, world[1]->localAddress().find('/'));
  CHECK(place == fmt::format(
                     "{}:{}",
                     [] {
                       char name[256] = {};
                       gethostname(name, sizeof(name) - 1);
                       return std::string(name);
                     }(),
                     getpid()));
  // Rank 1 posts three messages and leaves at once (its thread waits for rank 0's answer that
  // they arrived): they are still delivered, then the end of the connection is an Error naming
  // rank 1 and where it ran.
  for (char i = 0; i < 3; ++i) REQUIRE(tryPost(*world[1], 0, 4096, 'a' + i));
  std::thread leaver([leaving = std::move(world[1])]() mutable { leaving.reset(); });
  for (char i = 0; i < 3; ++i) {
    Envelope got;
    const void* data = awaitPeek(world, 0, 1, &got);
    REQUIRE(data != nullptr);
    CHECK(got.bytes == 4096);
    CHECK(static_cast<const char*>(data)[4095] == 'a' + i);
    world[0]->recv(1).release();
  }
  const Deadline deadline = Deadline::after(seconds(30));
  Envelope got;
  const Error closed =
      errorOf([&] { world[0]->recv(1).tryPeek(&got), world[0]->progress(); }, deadline);
  CHECK(closed.code() == ErrorCode::kRemote);
  CHECK_THAT(closed.what(), Catch::Contains("ucx: rank 1 (" + place + ") closed the connection"));
  CHECK_THAT(closed.what(), Catch::Contains("(seen by rank 0)"));
  CHECK_THROWS_AS(world[0]->send(1).tryAcquire(), Error);  // failed stays failed
  leaver.join();
}

// A peer that has left needs nothing more: a rank whose rendezvous sends to it never complete
// still leaves at once (it used to wait 5 s for those sends, then 5 s for a worker flush, where
// UCX's shared memory does not notice the peer's departure). The bound is far above the
// milliseconds this takes, and below the 5 s any wait for a peer costs.
TEST_CASE("ucx: a rank whose peer has left leaves promptly", "[ucx]") {
  auto options = worldOptions(2);
  for (Options& o : options) {
    o.slotBytes = 1 << 20;
    o.slots = 2;
    o.rdmaPorts = 1;  // UCX's rendezvous, as on an RDMA host
  }
  auto world = connectedPair(options[0], options[1]);
  for (char i = 0; i < 2; ++i) REQUIRE(tryPost(*world[0], 1, 1 << 20, 'a' + i));
  world[0]->progress();
  std::thread leaver([leaving = std::move(world[1])]() mutable { leaving.reset(); });
  leaver.join();
  const auto start = std::chrono::steady_clock::now();
  world[0].reset();
  CHECK(std::chrono::steady_clock::now() - start < seconds(4));
}

TEST_CASE("ucx: an address UCX cannot use fails connect, naming the rank", "[ucx]") {
  auto options = worldOptions(2);
  auto transport = makeUcxTransport(options[0]);
  const Deadline deadline = Deadline::after(seconds(5));
  auto errorFor = [&](const std::string& address) {
    try {
      transport->connect({1}, {transport->localAddress(), address}, deadline);
    } catch (const Error& e) {
      return std::make_pair(e.code(), std::string(e.what()));
    }
    return std::make_pair(ErrorCode::kInternal, std::string("connected"));
  };
  unsigned major = 0, minor = 0, patch = 0;
  ucp_get_version(&major, &minor, &patch);
  const std::string release = fmt::format("ucx{}.{}", major, minor);
  CHECK_THAT(transport->localAddress(), Catch::Contains("/" + release + "/"));
  for (const std::string& bad :
       std::vector<std::string>{"host:1", "host:1/", "host:1/" + release + "/",
                                "host:1/" + release + "/abc", "host:1/" + release + "/zz"}) {
    INFO(bad);
    const auto [code, message] = errorFor(bad);
    CHECK(code == ErrorCode::kRemote);
    CHECK_THAT(message, Catch::Contains("rank 1 (host:1) published a malformed address"));
  }
  // Another UCX release is refused before UCX parses the bytes (UCX 1.13 aborts on some).
  const auto [code, message] = errorFor("host:1/ucx0.1/ffffffffffffffffffffffffffffffff");
  CHECK(code == ErrorCode::kInvalidUsage);
  CHECK_THAT(message, Catch::Contains("rank 1 (host:1) runs ucx0.1, this rank " + release +
                                      ": run one UCX release on every host"));
}

TEST_CASE("ucx: connect fails at its deadline naming the peers that said no hello", "[ucx]") {
  auto options = worldOptions(3);
  std::vector<std::unique_ptr<Transport>> world;
  for (const Options& o : options) world.push_back(makeUcxTransport(o));
  const std::vector<std::string> addresses{world[0]->localAddress(), world[1]->localAddress(),
                                           world[2]->localAddress()};
  // Rank 1 connects too; rank 2 exists but never does.
  std::thread peer([&] {
    try {
      world[1]->connect({0}, addresses, Deadline::after(seconds(20)));
    } catch (const Error&) {
    }
  });
  Error error(ErrorCode::kInternal, "connected");
  try {
    world[0]->connect({1, 2}, addresses, Deadline::after(seconds(2)));
  } catch (const Error& e) {
    error = e;
  }
  peer.join();
  CHECK(error.code() == ErrorCode::kTimeout);
  CHECK_THAT(error.what(),
             Catch::Equals("ucx: rank 0 heard no hello from ranks 2 before the deadline"));
}

TEST_CASE("ucx: the wake-up descriptor becomes readable when a message arrives", "[ucx]") {
  auto options = worldOptions(2);
  auto world = connectedPair(options[0], options[1]);
  // Idle: once the events of the connection are taken and armWake() has armed it, nothing wakes
  // it (arming finds events still waiting now and then: then progress and arm again).
  pollfd waiter{world[1]->wakeFd(), POLLIN, 0};
  bool quiet = false;
  for (int i = 0; i < 100 && !quiet; ++i) {
    world[1]->progress();
    quiet = world[1]->armWake() && poll(&waiter, 1, 0) == 0;
  }
  REQUIRE(waiter.fd >= 0);
  CHECK(quiet);
  REQUIRE(tryPost(*world[0], 1, 64, 'w'));
  world[0]->progress();
  // A bound far above any delivery time: the point is that it wakes at all.
  CHECK(poll(&waiter, 1, 10000) == 1);
  Envelope got;
  REQUIRE(awaitPeek(world, 1, 0, &got) != nullptr);
  CHECK(got.bytes == 64);
  leaveTogether(world);
}

}  // namespace tutti::transport::test
