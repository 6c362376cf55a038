// tcp only: a peer that goes away, a peer that breaks the framing, strangers on the listening
// port, and connect() deadlines.
#include <poll.h>
#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <future>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/auth.hpp"
#include "base/drop_log.hpp"
#include "base/error.hpp"
#include "base/socket.hpp"
#include "transport/tcp/hello.hpp"
#include "transport/tcp/tcp_connect.hpp"
#include "world.hpp"

namespace tutti::transport::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

// A fake rank `from` that dials `address` and introduces itself properly (hello, secret,
// reply), so that what it sends afterwards reaches the data path.
Fd dialAsRank(const Options& options, int from, int to, const std::string& address) {
  const Deadline deadline = Deadline::after(seconds(10));
  Fd fd = connectTo(tcp::parseAddress(address, to), deadline);
  const std::string hello = tcp::encodeHello({from, to, 0, options.jobTag});
  writeAll(fd.get(), hello.data(), hello.size(), deadline, "rank 0");
  authenticateAsClient(fd.get(), options.secret, deadline, "rank 0");
  std::string reply(tcp::helloBytes(options.jobTag), '\0');
  readAll(fd.get(), reply.data(), reply.size(), deadline, "rank 0");
  const tcp::Hello got = tcp::decodeHello(reply, options.jobTag);
  REQUIRE(got.from == to);
  REQUIRE(got.to == from);
  return fd;
}

// Rank 0's real transport, connected to a fake rank 1 whose socket the test writes raw frames to.
struct FakeRankLink {
  FakeRankLink() {
    const Options options = smallOptions(0, 2, uniqueTag());
    transport = makeTcpTransport(options);
    const std::string address = transport->localAddress();
    auto fake = std::async(std::launch::async, [&] { return dialAsRank(options, 1, 0, address); });
    transport->connect({1}, {address, "127.0.0.1:9"}, Deadline::after(seconds(10)));
    fd = fake.get();
  }

  std::unique_ptr<Transport> transport;
  Fd fd;
};

// Reads and discards until the peer closes `fd` (true) or the deadline passes (false).
bool closedByPeer(int fd, const Deadline& deadline) {
  char sink[256];
  while (!deadline.expired()) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(deadline.remainingMs())) <= 0) continue;
    const ssize_t n = recv(fd, sink, sizeof(sink), 0);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) return true;
  }
  return false;
}

// Whether connecting to `address` once, with no retry, is refused: nobody listens there.
bool refused(const SockAddr& address) {
  Fd fd(socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC, 0));
  REQUIRE(fd.valid());
  return ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address.storage), address.length) !=
             0 &&
         errno == ECONNREFUSED;
}

// [u32 length][3 x u64 tag], little-endian, as tcp_link.hpp says.
void writeFrameHeader(int fd, uint32_t length, const Tag& tag = {}) {
  uint8_t header[4 + sizeof(Tag)];
  for (int i = 0; i < 4; ++i) header[i] = static_cast<uint8_t>(length >> (8 * i));
  for (int w = 0; w < 3; ++w)
    for (int i = 0; i < 8; ++i)
      header[4 + 8 * w + i] = static_cast<uint8_t>(tag.words[w] >> (8 * i));
  writeAll(fd, header, sizeof header, Deadline::after(seconds(5)), "rank 0");
}

// Two real tcp ranks of one job, not connected yet.
struct TwoRanks {
  TwoRanks() {
    for (int r = 0; r < 2; ++r) world.push_back(makeTcpTransport(smallOptions(r, 2, tag)));
    addresses = {world[0]->localAddress(), world[1]->localAddress()};
  }
  // Rank 0 accepting rank 1, in the background.
  std::future<void> acceptOnRank0(seconds span) {
    return std::async(std::launch::async,
                      [this, span] { world[0]->connect({1}, addresses, Deadline::after(span)); });
  }

  const std::string tag = uniqueTag();
  std::vector<std::unique_ptr<Transport>> world;
  std::vector<std::string> addresses;
};

}  // namespace

TEST_CASE("tcp: the hello's bytes, and hellos that are not this job's", "[transport][tcp]") {
  const std::string hello = tcp::encodeHello({3, 1, 2, "job"});
  // u32 magic "tuth", u16 version, u16 tag length, i32 from, i32 to, u32 socket, tag
  const std::string expected(
      "tuth\x01\x00\x03\x00\x03\x00\x00\x00\x01\x00\x00\x00"
      "\x02\x00\x00\x00job",
      23);
  CHECK(hello == expected);
  const tcp::Hello back = tcp::decodeHello(hello, "job");
  CHECK(back.from == 3);
  CHECK(back.to == 1);
  CHECK(back.socket == 2);
  auto refusal = [](const std::string& bytes) {
    try {
      tcp::decodeHello(bytes, "job");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::kRemote);
      return std::string(e.what());
    }
    FAIL("the hello decoded");
    return std::string();
  };
  CHECK_THAT(refusal("xuth" + hello.substr(4)), Catch::Contains("bad magic"));
  CHECK_THAT(refusal(hello.substr(0, 4) + "\x07" + hello.substr(5)),
             Catch::Contains("protocol version 7, this is version 1"));
  CHECK_THAT(refusal(hello.substr(0, hello.size() - 1) + "x"), Catch::Contains("another job"));
  for (size_t length = 0; length < hello.size(); ++length)
    CHECK_THAT(refusal(hello.substr(0, length)), Catch::StartsWith("tcp hello: "));
  CHECK_THAT(refusal(hello + "x"), Catch::StartsWith("tcp hello: "));
}

TEST_CASE("tcp: a peer that closes is named by the survivor's tryPeek and tryAcquire",
          "[transport][tcp]") {
  TwoRanks ranks;
  auto& world = ranks.world;
  connectAll(world, Deadline::after(seconds(20)));
  const std::string address1 = world[1]->localAddress();

  // Rank 1 posts three messages and leaves at once: they are still delivered (the destructor
  // flushes), then the end of the stream is an Error naming rank 1.
  for (int i = 0; i < 3; ++i) {
    void* slot = world[1]->send(0).tryAcquire();
    REQUIRE(slot != nullptr);
    std::memset(slot, 'a' + i, 4096);
    world[1]->send(0).post(4096, {});
  }
  world[1].reset();
  RecvConn& recv = world[0]->recv(1);
  const Deadline deadline = Deadline::after(seconds(10));
  for (int i = 0; i < 3; ++i) {
    Envelope got;
    const void* data = nullptr;
    while (!(data = recv.tryPeek(&got)) && !deadline.expired()) world[0]->progress();
    REQUIRE(data != nullptr);
    CHECK(got.bytes == 4096);
    CHECK(static_cast<const char*>(data)[4095] == 'a' + i);
    recv.release();
  }
  Envelope got;
  const Error closed = errorOf([&] { recv.tryPeek(&got), world[0]->progress(); }, deadline);
  CHECK(closed.code() == ErrorCode::kRemote);
  const std::string message = closed.what();
  CHECK(message.find("rank 1 (" + address1 + ")") != std::string::npos);
  CHECK(message.find("closed the connection") != std::string::npos);
  // The same error again: a failed connection stays failed.
  CHECK_THROWS_AS(recv.tryPeek(&got), Error);

  // Sending to the departed rank fails too, once the kernel has heard of it.
  SendConn& send = world[0]->send(1);
  const Error sendError = errorOf(
      [&] {
        if (void* slot = send.tryAcquire()) {
          std::memset(slot, 0, 4096);
          send.post(4096, {});
        }
        world[0]->progress();
      },
      deadline);
  CHECK(sendError.code() == ErrorCode::kRemote);
  CHECK(std::string(sendError.what()).find("rank 1") != std::string::npos);
}

TEST_CASE("tcp: a rank that leaves first delivers everything it posted", "[transport][tcp]") {
  Warnings log;
  const std::string tag = uniqueTag();
  std::vector<std::unique_ptr<Transport>> world;
  for (int r = 0; r < 2; ++r) {
    Options options = smallOptions(r, 2, tag);
    options.slotBytes = 64 << 10;
    world.push_back(makeTcpTransport(options));
  }
  connectAll(world, Deadline::after(seconds(20)));
  // Rank 1 posts until the socket buffers and all its staging slots are full...
  Traffic out(11, 1, 0, 64 << 10);
  uint64_t posted = 0;
  int idle = 0;
  const Deadline deadline = Deadline::after(seconds(30));
  while (idle < 1000 && !deadline.expired()) {
    void* slot = world[1]->send(0).tryAcquire();
    if (!slot) {
      ++idle;
      std::this_thread::yield();
      continue;
    }
    idle = 0;
    const size_t bytes = out.nextSize();
    out.fill(static_cast<std::byte*>(slot), bytes, posted++);
    world[1]->send(0).post(bytes, {});
  }
  // Frames wait in this process (a loaded machine may still let the kernel take one more slot's
  // worth after the loop, so fullness itself is not asserted).
  REQUIRE(world[1]->sendsPending());
  // ...and leaves: its destructor must flush the staged frames while rank 0 reads.
  auto leaving = std::async(std::launch::async, [&] { world[1].reset(); });
  Traffic in(11, 1, 0, 64 << 10);
  std::vector<std::byte> expect(64 << 10);
  RecvConn& recv = world[0]->recv(1);
  uint64_t received = 0;
  try {
    while (!deadline.expired()) {
      Envelope got;
      const void* data = recv.tryPeek(&got);
      if (!data) continue;
      const size_t want = in.nextSize();
      REQUIRE(got.bytes == want);
      in.fill(expect.data(), want, received);
      REQUIRE(std::memcmp(data, expect.data(), want) == 0);
      recv.release();
      ++received;
    }
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::kRemote);
  }
  leaving.get();
  CHECK(received == posted);
  CHECK(posted > 8);  // the kernel buffers were full, frames waited in user space
  CHECK(log.all().empty());
}

TEST_CASE_METHOD(FakeRankLink,
                 "tcp: a frame longer than a slot is a remote error, not an allocation",
                 "[transport][tcp]") {
  // One good frame, then one that claims slotBytes + 1 bytes.
  writeFrameHeader(fd.get(), 3);
  writeAll(fd.get(), "abc", 3, Deadline::after(seconds(5)), "rank 0");
  SECTION("just above the limit") {
    writeFrameHeader(fd.get(), 4097);
  }
  SECTION("4 GiB - 1") {
    writeFrameHeader(fd.get(), 0xffffffffu);
  }
  writeAll(fd.get(), "junk", 4, Deadline::after(seconds(5)), "rank 0");

  RecvConn& recv = transport->recv(1);
  const Deadline deadline = Deadline::after(seconds(10));
  Envelope got;
  const void* data = nullptr;
  while (!(data = recv.tryPeek(&got)) && !deadline.expired()) transport->progress();
  REQUIRE(data != nullptr);
  CHECK(std::string(static_cast<const char*>(data), got.bytes) == "abc");
  recv.release();
  const Error error = errorOf([&] { recv.tryPeek(&got); }, deadline);
  CHECK(error.code() == ErrorCode::kRemote);
  const std::string message = error.what();
  CHECK(message.find("rank 1") != std::string::npos);
  CHECK(message.find("limit 4096") != std::string::npos);
  CHECK((message.find("4097 bytes") != std::string::npos ||
         message.find("4294967295 bytes") != std::string::npos));
}

TEST_CASE_METHOD(
    FakeRankLink,
    "tcp: frames that come one at a time reuse one slot; frames read ahead take others",
    "[transport][tcp]") {
  RecvConn& recv = transport->recv(1);
  const Deadline deadline = Deadline::after(seconds(30));
  auto writeFrame = [&](const std::string& payload) {
    writeFrameHeader(fd.get(), static_cast<uint32_t>(payload.size()));
    writeAll(fd.get(), payload.data(), payload.size(), Deadline::after(seconds(5)), "rank 0");
  };
  auto peek = [&](const std::string& expected) {
    Envelope got;
    const void* data = nullptr;
    while (!(data = recv.tryPeek(&got)) && !deadline.expired()) transport->progress();
    REQUIRE(data != nullptr);
    CHECK(std::string(static_cast<const char*>(data), got.bytes) == expected);
    return data;
  };

  // Sizes growing past a page: a slot per frame would touch every slot's pages in turn.
  const void* warm = nullptr;
  for (size_t bytes = 1; bytes <= 4096; bytes *= 4) {
    const std::string payload(bytes, static_cast<char>('a' + bytes % 26));
    writeFrame(payload);
    const void* slot = peek(payload);
    if (!warm) warm = slot;
    CHECK(slot == warm);
    recv.release();
  }

  // Two frames in the socket at once: the second is read ahead into another slot, while the
  // first is still held.
  writeFrame("first");
  writeFrame("second");
  const void* first = peek("first");
  const Deadline settle = Deadline::after(milliseconds(200));
  while (!settle.expired()) transport->progress();  // reads "second" ahead
  CHECK(first == warm);
  recv.release();
  CHECK(peek("second") != warm);
  recv.release();

  // The sending side alike: a frame that leaves at once frees its slot for the next.
  SendConn& send = transport->send(1);
  void* sendSlot = nullptr;
  for (int i = 0; i < 6; ++i) {
    void* slot = nullptr;
    while (!(slot = send.tryAcquire()) && !deadline.expired()) transport->progress();
    REQUIRE(slot != nullptr);
    if (!sendSlot) sendSlot = slot;
    CHECK(slot == sendSlot);
    std::memcpy(slot, "ping", 4);
    send.post(4, Tag{});
  }
}

TEST_CASE_METHOD(FakeRankLink,
                 "tcp: frames cut anywhere in the byte stream arrive whole and in order",
                 "[transport][tcp]") {
  RecvConn& recv = transport->recv(1);
  const size_t slotBytes = recv.slotBytes();

  // Frames of every size class -- empty, a few bytes, around the receiver's one-page inbox, a
  // whole slot -- as one byte stream, written in random pieces with pauses, so that headers and
  // payloads are cut at every kind of place and several frames at once wait in the socket.
  std::mt19937_64 random(20261204);
  const std::vector<size_t> sizes = {0, 1, 7, 28, 4068, 4069, 4096, slotBytes, 3, 0, 2000};
  std::vector<std::string> frames;
  std::string stream;
  for (int i = 0; i < 60; ++i) {
    const size_t bytes = i < static_cast<int>(sizes.size()) ? sizes[i] : random() % (slotBytes + 1);
    std::string payload(bytes, '\0');
    for (char& c : payload) c = static_cast<char>(random());
    const Tag tag{{static_cast<uint64_t>(i), 7, 9}};
    std::string header(4 + sizeof(Tag), '\0');
    for (int b = 0; b < 4; ++b) header[b] = static_cast<char>(bytes >> (8 * b));
    for (int w = 0; w < 3; ++w)
      for (int b = 0; b < 8; ++b)
        header[4 + 8 * w + b] = static_cast<char>(tag.words[w] >> (8 * b));
    stream += header + payload;
    frames.push_back(std::move(payload));
  }
  auto writer = std::async(std::launch::async, [&] {
    std::mt19937_64 pieces(7);
    for (size_t at = 0; at < stream.size();) {
      const size_t n = std::min<size_t>(1 + pieces() % 9000, stream.size() - at);
      writeAll(fd.get(), stream.data() + at, n, Deadline::after(seconds(10)), "rank 0");
      at += n;
      if (pieces() % 4 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });

  // Every third frame into the caller's memory, the others peeked from their slot.
  const Deadline deadline = Deadline::after(seconds(30));
  std::string into(slotBytes, '.');
  for (size_t i = 0; i < frames.size(); ++i) {
    const Envelope expected{frames[i].size(), Tag{{i, 7, 9}}};
    Envelope got;
    if (i % 3 == 0) {
      while (!recv.tryReceiveInto(into.data(), expected, &got) && !deadline.expired())
        transport->progress();
      REQUIRE(got == expected);
      REQUIRE(into.compare(0, got.bytes, frames[i]) == 0);
    } else {
      const void* data = nullptr;
      while (!(data = recv.tryPeek(&got)) && !deadline.expired()) transport->progress();
      REQUIRE(data != nullptr);
      REQUIRE(got == expected);
      REQUIRE(std::string(static_cast<const char*>(data), got.bytes) == frames[i]);
      recv.release();
    }
  }
  writer.get();
}

TEST_CASE_METHOD(
    FakeRankLink,
    "tcp: tryReceiveInto reads into the caller's memory; a wrong size or tag stays; an abandoned "
    "receive fails the link",
    "[transport][tcp]") {
  auto write = [&](const char* text) {
    writeAll(fd.get(), text, std::strlen(text), Deadline::after(seconds(5)), "rank 0");
  };
  RecvConn& recv = transport->recv(1);
  REQUIRE(recv.receivesInPlace());
  const Deadline deadline = Deadline::after(seconds(30));
  std::string dst(8, '.');
  const Tag tag{{1, 2, 3}}, otherTag{{1, 2, 4}};
  Envelope got;
  // Progress alone until the caller's memory holds `text`: bytes read there, not into a slot.
  auto progressUntilDstHolds = [&](const std::string& text) {
    while (dst.compare(0, text.size(), text) != 0 && !deadline.expired()) transport->progress();
    REQUIRE(dst.compare(0, text.size(), text) == 0);
  };

  // Asked for before it arrives, the frame lands in place.
  CHECK_FALSE(recv.tryReceiveInto(dst.data(), {6, tag}, &got));
  writeFrameHeader(fd.get(), 6, tag);
  write("abcdef");
  progressUntilDstHolds("abcdef");
  REQUIRE(recv.tryReceiveInto(dst.data(), {6, tag}, &got));
  CHECK(got == Envelope{6, tag});

  // A frame of another size, or of the same size and another tag, is reported and left for
  // tryPeek; the memory is untouched.
  for (const Envelope sent : {Envelope{3, tag}, Envelope{5, otherTag}}) {
    writeFrameHeader(fd.get(), static_cast<uint32_t>(sent.bytes), sent.tag);
    write(std::string("vwxyz").substr(0, sent.bytes).c_str());
    dst.assign(8, '.');
    while (!recv.tryReceiveInto(dst.data(), {5, tag}, &got) && !deadline.expired())
      transport->progress();
    CHECK(got == sent);
    CHECK(dst == "........");
    const void* data = recv.tryPeek(&got);
    REQUIRE(data != nullptr);
    CHECK(std::string(static_cast<const char*>(data), got.bytes) ==
          std::string("vwxyz").substr(0, sent.bytes));
    recv.release();
  }

  // Half a frame in the caller's memory, then the caller gives up: the rest must not follow it
  // there, and the link fails.
  CHECK_FALSE(recv.tryReceiveInto(dst.data(), {8, tag}, &got));
  writeFrameHeader(fd.get(), 8, tag);
  write("1234");
  progressUntilDstHolds("1234");
  recv.abandonReceive();
  dst.assign(8, '.');
  write("5678");
  const Error error = errorOf(
      [&] {
        transport->progress();
        recv.tryPeek(&got);
      },
      deadline);
  CHECK(std::string(error.what()).find("abandoned") != std::string::npos);
  CHECK(dst == "........");
}

TEST_CASE_METHOD(FakeRankLink,
                 "tcp: a receive abandoned before its frame's header came keeps the link",
                 "[transport][tcp]") {
  RecvConn& recv = transport->recv(1);
  const Deadline deadline = Deadline::after(seconds(30));
  const Tag tag{{7, 8, 9}};
  std::string first(6, '.'), second(4, '.');
  Envelope got;
  // A frame lands in the caller's memory and is taken.
  CHECK_FALSE(recv.tryReceiveInto(first.data(), {6, tag}, &got));
  writeFrameHeader(fd.get(), 6, tag);
  writeAll(fd.get(), "abcdef", 6, Deadline::after(seconds(5)), "rank 0");
  while (!recv.tryReceiveInto(first.data(), {6, tag}, &got) && !deadline.expired())
    transport->progress();
  REQUIRE(first == "abcdef");
  // The next receive into the same memory is given up before a byte of its frame came: the last
  // frame's bytes there are no sign of this one, so nothing was lost and the link goes on.
  CHECK_FALSE(recv.tryReceiveInto(first.data(), {4, tag}, &got));
  recv.abandonReceive();
  writeFrameHeader(fd.get(), 4, tag);
  writeAll(fd.get(), "wxyz", 4, Deadline::after(seconds(5)), "rank 0");
  bool taken = false;
  while (!(taken = recv.tryReceiveInto(second.data(), {4, tag}, &got)) && !deadline.expired())
    transport->progress();
  REQUIRE(taken);
  CHECK(got == Envelope{4, tag});
  CHECK(second == "wxyz");
  CHECK(first == "abcdef");
}

TEST_CASE("tcp: strangers on the port are dropped and the real peers still connect",
          "[transport][tcp]") {
  Warnings log;
  log.expect();
  TwoRanks ranks;
  const std::string& tag = ranks.tag;
  auto& world = ranks.world;
  const std::vector<std::string>& addresses = ranks.addresses;
  const SockAddr rank0 = tcp::parseAddress(addresses[0], 0);
  const Deadline setup = Deadline::after(seconds(5));
  const auto start = Clock::now();

  // Before rank 0 accepts anything: garbage, silence, half a hello, another job's hello.
  Fd garbage = connectTo(rank0, setup);
  const std::string junk(200, 'G');
  writeAll(garbage.get(), junk.data(), junk.size(), setup, "rank 0");
  Fd silent = connectTo(rank0, setup);
  Fd half = connectTo(rank0, setup);
  const std::string hello = tcp::encodeHello({1, 0, 0, tag});
  writeAll(half.get(), hello.data(), hello.size() / 2, setup, "rank 0");
  Fd otherJob = connectTo(rank0, setup);
  const std::string otherHello = tcp::encodeHello({1, 0, 0, tag.substr(0, tag.size() - 1) + "Z"});
  writeAll(otherJob.get(), otherHello.data(), otherHello.size(), setup, "rank 0");

  auto accepting = ranks.acceptOnRank0(seconds(10));
  // A stranger with a perfect hello but not the secret: refused once rank 0 is accepting.
  Fd impostor = connectTo(rank0, setup);
  writeAll(impostor.get(), hello.data(), hello.size(), setup, "rank 0");
  CHECK_THROWS_AS(authenticateAsClient(impostor.get(), Secret::random(), setup, "rank 0"), Error);

  world[1]->connect({0}, addresses, Deadline::after(seconds(10)));
  accepting.get();
  // Nobody waited for the silent ones.
  CHECK(Clock::now() - start < seconds(4));
  world[0]->connected();
  world[1]->connected();
  CHECK(log.contains("not a tutti tcp hello"));
  CHECK(log.contains("another job"));
  CHECK(log.contains("did not prove the job secret"));

  MeshStream s0(*world[0], 0, {1}, 300, 3);
  MeshStream s1(*world[1], 1, {0}, 300, 3);
  runStreams({&s0, &s1}, Deadline::after(seconds(30)));
}

TEST_CASE("tcp: a crowd of strangers on the port costs a few lines and one summary",
          "[transport][tcp]") {
  Warnings log;
  log.expect();
  TwoRanks ranks;
  auto& world = ranks.world;
  const std::vector<std::string>& addresses = ranks.addresses;
  const SockAddr rank0 = tcp::parseAddress(addresses[0], 0);
  auto accepting = ranks.acceptOnRank0(seconds(20));
  constexpr int kStrangers = 40;
  const std::string junk(200, 'G');
  const Deadline setup = Deadline::after(seconds(15));
  std::vector<Fd> crowd;
  for (int i = 0; i < kStrangers; ++i) {
    crowd.push_back(connectTo(rank0, setup));
    writeAll(crowd.back().get(), junk.data(), junk.size(), setup, "rank 0");
  }
  // Every stranger is dropped before the real peer connects, so the count below is exact.
  for (const Fd& stranger : crowd) REQUIRE(closedByPeer(stranger.get(), setup));
  world[1]->connect({0}, addresses, Deadline::after(seconds(10)));
  accepting.get();
  CHECK(log.count({"tcp: rank 0's data port: dropped connection from", "not a tutti tcp hello"}) ==
        DropLog::kBurst);
  CHECK(log.count({fmt::format("{} more dropped connections", kStrangers - DropLog::kBurst)}) == 1);
  CHECK(log.all().size() == DropLog::kBurst + 1);
}

TEST_CASE("tcp: connected() closes the listening port; the links stay", "[transport][tcp]") {
  TwoRanks ranks;
  auto& world = ranks.world;
  const std::vector<std::string>& addresses = ranks.addresses;
  auto accepting = ranks.acceptOnRank0(seconds(10));
  world[1]->connect({0}, addresses, Deadline::after(seconds(10)));
  accepting.get();
  for (int r = 0; r < 2; ++r) {
    const SockAddr port = tcp::parseAddress(addresses[r], r);
    CHECK_FALSE(refused(port));  // still listening: a stranger would wait in its backlog
    world[r]->connected();
    CHECK(refused(port));
  }
  MeshStream s0(*world[0], 0, {1}, 300, 3);
  MeshStream s1(*world[1], 1, {0}, 300, 3);
  runStreams({&s0, &s1}, Deadline::after(seconds(30)));
}

TEST_CASE("tcp: a peer with another secret cannot connect", "[transport][tcp]") {
  Warnings log;
  log.expect();
  const std::string tag = uniqueTag();
  Options b = smallOptions(1, 2, tag);
  b.secret = Secret::random();
  auto t0 = makeTcpTransport(smallOptions(0, 2, tag));
  auto t1 = makeTcpTransport(b);
  const std::vector<std::string> addresses{t0->localAddress(), t1->localAddress()};
  auto accepting = std::async(std::launch::async, [&] {
    try {
      t0->connect({1}, addresses, Deadline::after(milliseconds(2000)));
    } catch (const Error& e) {
      return e;
    }
    return Error(ErrorCode::kInternal, "connected");
  });
  try {
    t1->connect({0}, addresses, Deadline::after(seconds(10)));
    FAIL("rank 1 connected with the wrong secret");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::kRemote);
    CHECK(std::string(e.what()).find("rank 0 (" + addresses[0] + ")") != std::string::npos);
  }
  const Error e0 = accepting.get();
  CHECK(e0.code() == ErrorCode::kTimeout);
  CHECK(std::string(e0.what()).find("1 (" + addresses[1] + ")") != std::string::npos);
  CHECK(log.contains("did not prove the job secret"));
}

TEST_CASE("tcp: connect() keeps its deadline and names the missing peers", "[transport][tcp]") {
  const std::string tag = uniqueTag();
  std::vector<std::unique_ptr<Transport>> world;
  for (int r = 0; r < 3; ++r) world.push_back(makeTcpTransport(smallOptions(r, 3, tag)));
  std::vector<std::string> addresses;
  for (const auto& t : world) addresses.push_back(t->localAddress());

  SECTION("accepting: nobody dials") {
    const auto start = Clock::now();
    try {
      world[0]->connect({1, 2}, addresses, Deadline::after(milliseconds(300)));
      FAIL("connect did not time out");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::kTimeout);
      const std::string message = e.what();
      CHECK(message.find("1 (" + addresses[1] + ")") != std::string::npos);
      CHECK(message.find("2 (" + addresses[2] + ")") != std::string::npos);
    }
    const auto elapsed = Clock::now() - start;
    CHECK(elapsed >= milliseconds(300));
    CHECK(elapsed < seconds(2));
  }
  SECTION("dialling: rank 0 listens but never accepts") {
    const auto start = Clock::now();
    try {
      world[2]->connect({0}, addresses, Deadline::after(milliseconds(300)));
      FAIL("connect did not time out");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::kTimeout);
      CHECK(std::string(e.what()).find("0 (" + addresses[0] + ")") != std::string::npos);
    }
    CHECK(Clock::now() - start < seconds(2));
  }
}

TEST_CASE("tcp: localAddress advertises loopback for a wildcard bind", "[transport][tcp]") {
  Options options = smallOptions(0, 1, uniqueTag());
  options.bindHost = "";
  auto transport = makeTcpTransport(options);
  const std::string address = transport->localAddress();
  CHECK(address.rfind("127.0.0.1:", 0) == 0);
  CHECK(tcp::parseAddress(address, 0).port() > 0);
  CHECK_THROWS_AS(tcp::parseAddress("no-port", 0), Error);
  CHECK_THROWS_AS(tcp::parseAddress("host:99999", 0), Error);
  CHECK(tcp::parseAddress("[::1]:80", 0).port() == 80);
}

}  // namespace tutti::transport::test
