// shm only: ranks as separate processes, the segment names' lifetime, and a full /dev/shm.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <thread>

#include "base/error.hpp"
#include "base/socket.hpp"
#include "transport/shm/segment.hpp"
#include "world.hpp"

namespace tutti::transport::test {
namespace {

using std::chrono::seconds;

// A length-prefixed string over a socketpair, with a deadline.
void sendText(int fd, const std::string& text) {
  const uint32_t length = static_cast<uint32_t>(text.size());
  writeAll(fd, &length, sizeof(length), Deadline::after(seconds(30)), "the other process");
  writeAll(fd, text.data(), text.size(), Deadline::after(seconds(30)), "the other process");
}

std::string receiveText(int fd) {
  uint32_t length = 0;
  readAll(fd, &length, sizeof(length), Deadline::after(seconds(60)), "the other process");
  std::string text(length, '\0');
  readAll(fd, text.data(), length, Deadline::after(seconds(60)), "the other process");
  return text;
}

// Forks a process that runs `body` with its end of a socketpair; whatever it throws is sent
// back as "error: ..." and makes it exit with status 1. The parent gets the child's pid and its
// own end of the socketpair.
pid_t forkRank(const std::function<void(int)>& body, Fd* parentEnd) {
  int ends[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(ends[0]);
    int status = 0;
    try {
      body(ends[1]);
    } catch (const std::exception& e) {
      try {
        sendText(ends[1], std::string("error: ") + e.what());
      } catch (...) {
      }
      status = 1;
    }
    _exit(status);
  }
  close(ends[1]);
  *parentEnd = Fd(ends[0]);
  return pid;
}

// The Error rank 0's connect() to rank 1 at `peerName` throws; fails the test when none.
Error connectError(Transport& ours, const std::string& peerName) {
  try {
    ours.connect({1}, {ours.localAddress(), peerName}, Deadline::after(seconds(5)));
  } catch (const Error& e) {
    return e;
  }
  FAIL("connect did not throw");
  return Error(ErrorCode::kInternal, "unreachable");
}

// Rank 0's transport, and rank 1's segment opened for writing, as a squatter or a rank of another
// build could.
struct TamperedPeer {
  std::string tag = uniqueTag();
  std::unique_ptr<Transport> ours = makeShmTransport(smallOptions(0, 2, tag));
  std::unique_ptr<Transport> peer = makeShmTransport(smallOptions(1, 2, tag));
  std::string peerName = peer->localAddress();
  Fd fd{shm_open(peerName.c_str(), O_RDWR, 0)};

  TamperedPeer() { REQUIRE(fd.valid()); }
};

int waitExit(pid_t pid) {
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  return status;
}

}  // namespace

TEST_CASE("shm: two processes stream through each other's segments", "[transport][shm]") {
  Warnings log;
  const std::string tag = uniqueTag();
  const int count = 3000;
  Fd channel;
  const pid_t child = forkRank(
      [&](int fd) {
        auto transport = makeShmTransport(smallOptions(1, 2, tag));
        sendText(fd, transport->localAddress());
        const std::string peer = receiveText(fd);
        transport->connect({0}, {peer, transport->localAddress()}, Deadline::after(seconds(20)));
        sendText(fd, "connected");
        if (receiveText(fd) != "go") throw std::runtime_error("no go");
        transport->connected();
        MeshStream stream(*transport, 1, {0}, count, 99);
        runStreams({&stream}, Deadline::after(seconds(60)));
        sendText(fd, "done");
      },
      &channel);
  auto transport = makeShmTransport(smallOptions(0, 2, tag));
  const std::string childAddress = receiveText(channel.get());
  REQUIRE(childAddress.rfind("/" + shmPrefix(tag) + "1-", 0) == 0);
  sendText(channel.get(), transport->localAddress());
  transport->connect({1}, {transport->localAddress(), childAddress}, Deadline::after(seconds(20)));
  REQUIRE(receiveText(channel.get()) == "connected");
  CHECK(shmSegmentsOf(tag).size() == 2);  // both exist until connected()
  sendText(channel.get(), "go");
  transport->connected();
  MeshStream stream(*transport, 0, {1}, count, 99);
  runStreams({&stream}, Deadline::after(seconds(60)));
  CHECK(receiveText(channel.get()) == "done");
  const int status = waitExit(child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(shmSegmentsOf(tag).empty());
  CHECK(log.all().empty());
}

TEST_CASE("shm: no segment survives a rank killed mid-stream", "[transport][shm]") {
  const std::string tag = uniqueTag();
  Fd channel;
  const pid_t child = forkRank(
      [&](int fd) {
        auto transport = makeShmTransport(smallOptions(1, 2, tag));
        sendText(fd, transport->localAddress());
        const std::string peer = receiveText(fd);
        transport->connect({0}, {peer, transport->localAddress()}, Deadline::after(seconds(20)));
        sendText(fd, "connected");
        if (receiveText(fd) != "go") throw std::runtime_error("no go");
        transport->connected();
        sendText(fd, "unlinked");
        // Streams far more than rank 0 will read: killed while blocked on a full FIFO.
        MeshStream stream(*transport, 1, {0}, 1 << 30, 5);
        runStreams({&stream}, Deadline::after(seconds(100)));
      },
      &channel);
  auto transport = makeShmTransport(smallOptions(0, 2, tag));
  const std::string childAddress = receiveText(channel.get());
  sendText(channel.get(), transport->localAddress());
  transport->connect({1}, {transport->localAddress(), childAddress}, Deadline::after(seconds(20)));
  REQUIRE(receiveText(channel.get()) == "connected");
  REQUIRE(shmSegmentsOf(tag).size() == 2);
  sendText(channel.get(), "go");
  transport->connected();
  REQUIRE(receiveText(channel.get()) == "unlinked");
  CHECK(shmSegmentsOf(tag).empty());

  // Receive (and check) a good part of the stream, then kill the sender mid-stream.
  MeshStream stream(*transport, 0, {1}, 1 << 30, 5);
  const Deadline deadline = Deadline::after(seconds(30));
  while (stream.received(1) < 500 && !deadline.expired()) stream.step();
  REQUIRE(stream.received(1) >= 500);
  REQUIRE(kill(child, SIGKILL) == 0);
  const int status = waitExit(child);
  CHECK(WIFSIGNALED(status));
  CHECK(shmSegmentsOf(tag).empty());
  // The survivor keeps working on what is left: no crash, then nothing more arrives.
  for (int i = 0; i < 100; ++i) stream.step();
  const int got = stream.received(1);
  for (int i = 0; i < 100; ++i) stream.step();
  CHECK(stream.received(1) == got);
  transport.reset();
  CHECK(shmSegmentsOf(tag).empty());
}

TEST_CASE("shm: segment names begin with a hash of the job's secret", "[transport][shm]") {
  const Secret one = Secret::random(), other = Secret::random();
  const std::string prefix = segmentNamePrefix(one);
  REQUIRE(prefix.size() == 6 + 12 + 1);
  CHECK(prefix.rfind("tutti-", 0) == 0);
  CHECK(prefix.back() == '-');
  CHECK(prefix.find_first_not_of("0123456789abcdef", 6) == prefix.size() - 1);
  CHECK(segmentNamePrefix(one) == prefix);  // a launcher holding the secret finds the names
  CHECK(segmentNamePrefix(other) != prefix);
  CHECK(one.hex().find(prefix.substr(6, 12)) == std::string::npos);  // not the secret itself
}

TEST_CASE("shm: segment names vanish at connected() or destruction", "[transport][shm]") {
  const std::string tag = uniqueTag();
  std::vector<std::unique_ptr<Transport>> world;
  for (int r = 0; r < 3; ++r) world.push_back(makeShmTransport(smallOptions(r, 3, tag)));
  std::vector<std::string> expected;
  for (int r = 0; r < 3; ++r) {
    const std::string address = world[r]->localAddress();
    // "/tutti-<12 hex digits of the secret's hash>-<tag>-<rank>-<16 hex digits>"
    const std::string prefix = "/" + shmPrefix(tag) + std::to_string(r) + "-";
    REQUIRE(address.rfind(prefix, 0) == 0);
    REQUIRE(address.size() == prefix.size() + 16);
    CHECK(address.find_first_not_of("0123456789abcdef", prefix.size()) == std::string::npos);
    expected.push_back(address.substr(1));
  }
  auto names = shmSegmentsOf(tag);
  std::sort(names.begin(), names.end());
  std::sort(expected.begin(), expected.end());
  CHECK(names == expected);

  SECTION("connected() unlinks") {
    connectAll(world, Deadline::after(seconds(10)));
    CHECK(shmSegmentsOf(tag).empty());
    // The mappings still work after the names are gone.
    void* slot = world[2]->send(0).tryAcquire();
    REQUIRE(slot != nullptr);
    std::memcpy(slot, "hello", 5);
    world[2]->send(0).post(5, {});
    Envelope got;
    const void* data = world[0]->recv(2).tryPeek(&got);
    REQUIRE(data != nullptr);
    CHECK(std::string(static_cast<const char*>(data), got.bytes) == "hello");
    world[0]->recv(2).release();
  }
  SECTION("the destructor unlinks when connected() never ran") {
    world.clear();
    CHECK(shmSegmentsOf(tag).empty());
  }
}

TEST_CASE("shm: a request /dev/shm cannot hold is an Error naming /dev/shm", "[transport][shm]") {
  const std::string tag = uniqueTag();
  Options options = smallOptions(0, 2, tag);
  options.slotBytes = size_t{1} << 30;
  options.slots = 1024;  // 1 TiB per FIFO
  auto transport = makeShmTransport(options);
  try {
    transport->connect({1},
                       {transport->localAddress(), "/" + shmPrefix(tag) + "1-0000000000000000"},
                       Deadline::after(seconds(5)));
    FAIL("connect did not throw");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::kSystem);
    const std::string message = e.what();
    CHECK(message.find("/dev/shm") != std::string::npos);
    CHECK(message.find("1024.0 GiB") != std::string::npos);  // the size it needs
  }
  transport.reset();
  CHECK(shmSegmentsOf(tag).empty());
}

TEST_CASE("shm: ranks with different options refuse to connect", "[transport][shm]") {
  const std::string tag = uniqueTag();
  Options a = smallOptions(0, 2, tag);
  Options b = smallOptions(1, 2, tag);
  b.slots = 8;
  auto ta = makeShmTransport(a);
  auto tb = makeShmTransport(b);
  const std::vector<std::string> addresses{ta->localAddress(), tb->localAddress()};
  try {
    ta->connect({1}, addresses, Deadline::after(seconds(5)));
    FAIL("connect did not throw");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::kInvalidUsage);
    CHECK(std::string(e.what()).find("same options") != std::string::npos);
  }
  // An address that names another rank's segment is refused as well.
  auto tc = makeShmTransport(smallOptions(0, 2, tag));
  CHECK_THROWS_AS(
      tc->connect({1}, {tc->localAddress(), ta->localAddress()}, Deadline::after(seconds(5))),
      Error);
}

TEST_CASE("shm: a segment of another job is refused", "[transport][shm]") {
  const std::string tagA = uniqueTag();
  const std::string tagB = uniqueTag();
  auto ours = makeShmTransport(smallOptions(0, 2, tagA));
  auto theirs = makeShmTransport(smallOptions(1, 2, tagB));
  const Error e = connectError(*ours, theirs->localAddress());
  CHECK(e.code() == ErrorCode::kInvalidUsage);
  CHECK(std::string(e.what()).find("belongs to another job") != std::string::npos);
}

TEST_CASE("shm: a segment of another tutti version is refused, naming both versions",
          "[transport][shm]") {
  TamperedPeer t;
  // What a rank of a build with another FIFO layout would have written in its header.
  // The version is the little-endian u32 after the u64 magic.
  const uint32_t older = shm::SegmentHeader::kVersion - 1;
  const uint8_t olderBytes[4] = {static_cast<uint8_t>(older), static_cast<uint8_t>(older >> 8),
                                 static_cast<uint8_t>(older >> 16),
                                 static_cast<uint8_t>(older >> 24)};
  REQUIRE(pwrite(t.fd.get(), olderBytes, sizeof(olderBytes), 8) ==
          static_cast<ssize_t>(sizeof(olderBytes)));
  const Error e = connectError(*t.ours, t.peerName);
  CHECK(e.code() == ErrorCode::kInvalidUsage);
  const std::string message = e.what();
  CHECK(message.find("another tutti version") != std::string::npos);
  CHECK(message.find(fmt::format("layout version {}, this rank's is {}", older,
                                 shm::SegmentHeader::kVersion)) != std::string::npos);
}

TEST_CASE("shm: a segment others may open is refused", "[transport][shm]") {
  TamperedPeer t;
  // Loosening the mode after creation is what a squatter's pre-created segment would look like.
  REQUIRE(fchmod(t.fd.get(), 0666) == 0);
  const Error e = connectError(*t.ours, t.peerName);
  CHECK(e.code() == ErrorCode::kInvalidUsage);
  CHECK(std::string(e.what()).find("mode 666") != std::string::npos);
}

// The doorbell: a side that sleeps (for far longer than the test may take) is woken by its
// peer's post or release, not by its own limit; a sleep whose wait is already over returns at once.
TEST_CASE("shm: a sleeping end wakes when its peer moves", "[transport][shm]") {
  using Clock = std::chrono::steady_clock;
  constexpr long kLimitNs = 60'000'000'000;  // the sleep's own limit: a lost wake-up waits this
  std::vector<std::unique_ptr<Transport>> transports;
  const std::string tag = uniqueTag();
  for (int rank = 0; rank < 2; ++rank)
    transports.push_back(makeShmTransport(smallOptions(rank, 2, tag)));
  connectAll(transports, Deadline::after(seconds(30)));
  SendConn& sender = transports[0]->send(1);
  RecvConn& receiver = transports[1]->recv(0);
  REQUIRE(sender.wakesSleepers());
  REQUIRE(receiver.wakesSleepers());
  auto sleepSeconds = [](Conn& conn) {
    const auto start = Clock::now();
    conn.sleep(kLimitNs);
    return std::chrono::duration<double>(Clock::now() - start).count();
  };

  SECTION("the receiver, woken by a post") {
    Envelope got;
    REQUIRE(receiver.tryPeek(&got) == nullptr);
    std::thread poster([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      REQUIRE(sender.tryAcquire() != nullptr);
      sender.post(8, {});
    });
    const double slept = sleepSeconds(receiver);
    poster.join();
    CHECK(slept < 30);
    REQUIRE(receiver.tryPeek(&got) != nullptr);
    CHECK(got.bytes == 8);
    // Data waits in the FIFO: no sleep at all.
    CHECK(sleepSeconds(receiver) < 30);
  }
  SECTION("the sender, woken by a release") {
    while (sender.tryAcquire()) sender.post(0, {});
    std::thread releaser([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      Envelope got;
      REQUIRE(receiver.tryPeek(&got) != nullptr);
      receiver.release();
    });
    const double slept = sleepSeconds(sender);
    releaser.join();
    CHECK(slept < 30);
    CHECK(sender.tryAcquire() != nullptr);
  }
}

}  // namespace tutti::transport::test
