// Both transports, same tests: every rank of a thread world streams random-size messages to every
// other rank while receiving, with FIFOs small enough to fill up, and checks every byte and the
// order of what it receives.
#include <sys/mman.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <functional>

#include "base/error.hpp"
#include "world.hpp"

namespace tutti::transport::test {

TEST_CASE("a full mesh of thread ranks streams exact bytes in order", "[transport][stream]") {
  const Kind kind = GENERATE(Kind::kShm, Kind::kTcp);
  const int nranks = GENERATE(2, 3, 4);
  SECTION("4 slots of 4 KiB") {
    streamWorld(kind, worldOptions(nranks), 1500, 42 + nranks);
  }
  SECTION("odd slot size, 3 slots") {
    auto options = worldOptions(nranks);
    for (Options& o : options) {
      o.slotBytes = 1000;
      o.slots = 3;
    }
    streamWorld(kind, options, 1000, 7);
  }
  SECTION("one slot of 64 KiB") {
    auto options = worldOptions(nranks);
    for (Options& o : options) {
      o.slotBytes = 64 << 10;
      o.slots = 1;
    }
    streamWorld(kind, options, 200, 9);
  }
}

TEST_CASE("tcp stripes frames over several sockets per peer", "[transport][stream][tcp]") {
  const int nranks = GENERATE(2, 3);
  const int sockets = GENERATE(2, 3);
  auto options = worldOptions(nranks);
  for (Options& o : options) {
    o.socketsPerPeer = sockets;
    o.slots = 5;
  }
  streamWorld(Kind::kTcp, options, 1500, 1234);
}

TEST_CASE("tcp without a secret still connects and streams", "[transport][stream][tcp]") {
  auto options = worldOptions(3);
  for (Options& o : options) o.secret = Secret{};
  streamWorld(Kind::kTcp, options, 300, 5);
}

TEST_CASE("one thread can drive several transports interleaved", "[transport][stream]") {
  const Kind kind = GENERATE(Kind::kShm, Kind::kTcp);
  const std::string tag = uniqueTag();
  std::vector<std::unique_ptr<Transport>> world;
  for (int r = 0; r < 3; ++r) world.push_back(make(kind, smallOptions(r, 3, tag)));
  connectAll(world, Deadline::after(std::chrono::seconds(20)));
  std::vector<MeshStream> streams;
  for (int r = 0; r < 3; ++r) streams.emplace_back(*world[r], r, allBut(r, 3), 500, 77);
  runStreams({&streams[0], &streams[1], &streams[2]}, Deadline::after(std::chrono::seconds(60)));
  for (const MeshStream& s : streams) CHECK(s.done());
}

void checkConnectionCalls(Kind kind) {
  const std::string tag = uniqueTag();
  std::vector<std::unique_ptr<Transport>> world;
  for (int r = 0; r < 2; ++r) world.push_back(make(kind, smallOptions(r, 2, tag)));
  connectAll(world, Deadline::after(std::chrono::seconds(20)));
  auto code = [](auto&& call) {
    try {
      call();
    } catch (const Error& e) {
      return e.code();
    }
    return ErrorCode::kInternal;
  };
  SendConn& send = world[0]->send(1);
  RecvConn& recv = world[1]->recv(0);
  CHECK(code([&] { send.post(1, {}); }) == ErrorCode::kInvalidUsage);  // no tryAcquire
  void* slot = send.tryAcquire();
  REQUIRE(slot != nullptr);
  std::memset(slot, 0x5a, 4096);
  CHECK(code([&] { send.post(4097, {}); }) == ErrorCode::kInvalidUsage);
  send.post(4096, {});
  CHECK(code([&] { recv.release(); }) == ErrorCode::kInvalidUsage);  // no tryPeek
  CHECK(code([&] { world[0]->send(0); }) == ErrorCode::kInvalidUsage);
  CHECK(code([&] { world[0]->recv(7); }) == ErrorCode::kInvalidUsage);
  CHECK(code([&] {
          world[0]->connect({1}, {world[0]->localAddress(), world[1]->localAddress()},
                            Deadline::after(std::chrono::seconds(1)));
        }) == ErrorCode::kInvalidUsage);  // already connected
  // The posted slot arrives whole.
  Envelope got;
  const void* data = nullptr;
  const Deadline deadline = Deadline::after(std::chrono::seconds(10));
  // Both ends progress, as the runtime's waits do (ucx receives only in progress()).
  while (!(data = recv.tryPeek(&got)) && !deadline.expired())
    for (auto& t : world) t->progress();
  REQUIRE(data != nullptr);
  CHECK(got.bytes == 4096);
  recv.release();
  leaveTogether(world);
}

void checkBadInputRejected(Kind kind) {
  const std::string tag = uniqueTag();
  auto rejects = [&](Options o) {
    try {
      make(kind, o);
    } catch (const Error& e) {
      return e.code() == ErrorCode::kInvalidArgument;
    }
    return false;
  };
  Options good = smallOptions(0, 2, tag);
  Options o = good;
  o.rank = 2;
  CHECK(rejects(o));
  o = good;
  o.slots = 0;
  CHECK(rejects(o));
  o = good;
  o.slotBytes = 0;
  CHECK(rejects(o));
  o = good;
  o.socketsPerPeer = 17;
  CHECK(rejects(o));
  o = good;
  o.jobTag = "a/b";
  CHECK(rejects(o));

  auto t = make(kind, good);
  const std::vector<std::string> addresses{t->localAddress(), "x"};
  const Deadline deadline = Deadline::after(std::chrono::seconds(1));
  CHECK_THROWS_AS(t->connect({0}, addresses, deadline), Error);       // self
  CHECK_THROWS_AS(t->connect({2}, addresses, deadline), Error);       // out of range
  CHECK_THROWS_AS(t->connect({1, 1}, addresses, deadline), Error);    // twice
  CHECK_THROWS_AS(t->connect({1}, {addresses[0]}, deadline), Error);  // too few addresses
}

// Two tcp ranks whose 32 slots of 1 MiB hold more than their sockets do.
constexpr size_t kInPlaceBytes = 1 << 20;
constexpr int kInPlaceFrames = 32;

std::vector<std::unique_ptr<Transport>> fullTcpPair() {
  auto options = worldOptions(2);
  for (Options& o : options) {
    o.slotBytes = kInPlaceBytes;
    o.slots = kInPlaceFrames;
  }
  std::vector<std::unique_ptr<Transport>> world;
  for (const Options& o : options) world.push_back(make(Kind::kTcp, o));
  connectAll(world, Deadline::after(std::chrono::seconds(20)));
  REQUIRE(world[0]->send(1).sendsInPlace());
  return world;
}

// Rank 1 receives `count` messages of `traffic` from rank 0 and checks each, calling
// `afterSenderMoved` after each of rank 0's progress calls.
void receiveInOrder(std::vector<std::unique_ptr<Transport>>& world, const Traffic& traffic,
                    int count, const std::function<void()>& afterSenderMoved) {
  RecvConn& recv = world[1]->recv(0);
  std::vector<std::byte> expect(kInPlaceBytes);
  const Deadline deadline = Deadline::after(std::chrono::seconds(30));
  int received = 0;
  while (received < count && !deadline.expired()) {
    world[0]->progress();
    afterSenderMoved();
    world[1]->progress();
    Envelope got;
    const void* data = recv.tryPeek(&got);
    if (!data) continue;
    traffic.fill(expect.data(), kInPlaceBytes, static_cast<uint64_t>(received));
    INFO("message " << received);
    CHECK(got == Envelope{kInPlaceBytes, traffic.tag(static_cast<uint64_t>(received))});
    CHECK(std::memcmp(data, expect.data(), kInPlaceBytes) == 0);
    recv.release();
    ++received;
  }
  CHECK(received == count);
}

// Messages sent in place, more than the sockets hold while the receiver reads nothing, leave sends
// pending, and arrive exact although their memory is overwritten as soon as sendsPending() says
// the transport has let go of it.
TEST_CASE("tcp reads what it sends in place until its sends are drained", "[transport][tcp]") {
  auto world = fullTcpPair();
  SendConn& send = world[0]->send(1);
  const Traffic traffic(5, 0, 1, kInPlaceBytes);
  std::vector<std::vector<std::byte>> sent;
  for (int k = 0; k < kInPlaceFrames; ++k) {
    sent.emplace_back(kInPlaceBytes);
    traffic.fill(sent.back().data(), kInPlaceBytes, static_cast<uint64_t>(k));
    REQUIRE(
        send.tryPostFrom(sent.back().data(), kInPlaceBytes, traffic.tag(static_cast<uint64_t>(k))));
    world[0]->progress();
  }
  CHECK(world[0]->sendsPending());  // the sockets are full: the transport still reads `sent`

  receiveInOrder(world, traffic, kInPlaceFrames, [&] {
    if (!sent.empty() && !world[0]->sendsPending()) {
      for (std::vector<std::byte>& data : sent) scribble(data);
      sent.clear();
    }
  });
  leaveTogether(world);
}

// A failed operation's caller frees its buffers at once: copyPendingSends() makes the queued
// frames independent of the caller's memory, even the one a socket holds half of. The memory is
// unmapped, so a frame still read from it fails the send (EFAULT) rather than pass unnoticed.
TEST_CASE("tcp sends in place from its own copy once told to copy them", "[transport][tcp]") {
  auto world = fullTcpPair();
  SendConn& send = world[0]->send(1);
  const Traffic traffic(6, 0, 1, kInPlaceBytes);
  const size_t mapped = kInPlaceBytes * kInPlaceFrames;
  void* region = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(region != MAP_FAILED);
  auto* bytes = static_cast<std::byte*>(region);
  for (int k = 0; k < kInPlaceFrames; ++k) {
    std::byte* message = bytes + kInPlaceBytes * static_cast<size_t>(k);
    traffic.fill(message, kInPlaceBytes, static_cast<uint64_t>(k));
    const Tag tag = traffic.tag(static_cast<uint64_t>(k));
    if (k % 4 == 3) {  // some staged frames among them, which stay as they are
      void* slot = send.tryAcquire();
      REQUIRE(slot);
      std::memcpy(slot, message, kInPlaceBytes);
      send.post(kInPlaceBytes, tag);
    } else if (k % 4 == 2) {  // and frames whose slot was acquired before they were sent in place
      REQUIRE(send.tryAcquire());
      REQUIRE(send.tryPostFrom(message, kInPlaceBytes, tag));
    } else {
      REQUIRE(send.tryPostFrom(message, kInPlaceBytes, tag));
    }
    world[0]->progress();
  }
  REQUIRE(world[0]->sendsPending());
  world[0]->copyPendingSends();
  REQUIRE(munmap(region, mapped) == 0);
  receiveInOrder(world, traffic, kInPlaceFrames, [] {});
  CHECK_FALSE(world[0]->sendsPending());
  CHECK_NOTHROW(send.tryAcquire());  // no write error was kept
  leaveTogether(world);
}

TEST_CASE("connection calls check their use", "[transport]") {
  checkConnectionCalls(GENERATE(Kind::kShm, Kind::kTcp));
}

TEST_CASE("bad options and peer lists are rejected", "[transport]") {
  checkBadInputRejected(GENERATE(Kind::kShm, Kind::kTcp));
}

}  // namespace tutti::transport::test
