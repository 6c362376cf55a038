// The proxy of a link between hosts (runtime/gpu/fifo_proxy.hpp) under the device protocol's
// schedules, CPU threads standing in for thread blocks (tests/unit/kernels/device_ring.hpp): four
// ranks as two "hosts" of two, the ring's two links between them split, their slots moved by a
// proxy on each side over a real TCP connection on loopback. Every ring collective, several
// operations in a row (the counters carry on), against sums computed here (int32: exact); then
// what breaks a link: a peer of another geometry, a frame out of order, a peer that goes away.
#include "runtime/gpu/fifo_proxy.hpp"

#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <future>
#include <numeric>
#include <random>
#include <vector>

#include "base/byte_codec.hpp"
#include "tests/error_of.hpp"
#include "tests/unit/kernels/device_ring.hpp"

using namespace tutti;
using namespace tutti::kernels;
using Catch::Matchers::Contains;
using tutti::runtime::gpu::FifoProxy;

namespace {

constexpr int kRanks = 4, kChannels = 2;
constexpr uint32_t kSlots = 4, kSlotBytes = 1024;

struct Connected {
  Fd a, b;
};

Connected tcpPair() {
  Fd listener = listenOn(SockAddr::resolve("127.0.0.1", 0), 1);
  auto accepted =
      std::async(std::launch::async, [&] { return acceptOne(listener.get(), Deadline::never()); });
  Fd a = connectTo(SockAddr::ofFd(listener.get()), Deadline::after(std::chrono::seconds(10)));
  return {std::move(a), accepted.get()};
}

// A proxy pair over a fresh loopback connection, made side by side (each waits for the other's
// hello): `out` on the first side, `in` on the second, and the second's `out`, `in` likewise.
std::pair<std::unique_ptr<FifoProxy>, std::unique_ptr<FifoProxy>> proxyPair(
    const std::vector<device::Fifo>& firstOut, const std::vector<device::Fifo>& firstIn,
    const std::vector<device::Fifo>& secondOut, const std::vector<device::Fifo>& secondIn) {
  Connected link = tcpPair();
  const Deadline deadline = Deadline::after(std::chrono::seconds(10));
  auto second = std::async(std::launch::async, [&] {
    return std::make_unique<FifoProxy>(std::move(link.b), secondOut, secondIn, "host A", deadline);
  });
  auto first =
      std::make_unique<FifoProxy>(std::move(link.a), firstOut, firstIn, "host B", deadline);
  return {std::move(first), second.get()};
}

// Host A holds ranks 0 and 1, host B ranks 2 and 3: the links 1 -> 2 and 3 -> 0 cross. Either one
// proxy per host over one connection, both links both ways, or one proxy per side of each link
// (one way each), as ranks that are processes of their own would run them.
struct TwoHosts {
  enum class Proxies { kPerHost, kPerLink };
  test::DeviceRing ring{kRanks, kChannels, kSlots, kSlotBytes};
  std::vector<std::unique_ptr<FifoProxy>> proxies;

  explicit TwoHosts(Proxies how) {
    ring.splitLink(1);
    ring.splitLink(3);
    std::vector<device::Fifo> sentByA, receivedByA, sentByB, receivedByB;
    for (int c = 0; c < kChannels; ++c) {
      sentByA.push_back(ring.sendingFifo(c, 1));
      receivedByA.push_back(ring.fifo(c, 3));
      sentByB.push_back(ring.sendingFifo(c, 3));
      receivedByB.push_back(ring.fifo(c, 1));
    }
    const auto keep = [&](auto pair) {
      proxies.push_back(std::move(pair.first));
      proxies.push_back(std::move(pair.second));
    };
    if (how == Proxies::kPerHost) {
      keep(proxyPair(sentByA, receivedByA, sentByB, receivedByB));
    } else {
      keep(proxyPair(sentByA, {}, {}, receivedByB));  // 1 -> 2
      keep(proxyPair(sentByB, {}, {}, receivedByA));  // 3 -> 0
    }
  }
};

std::vector<int32_t> seeded(std::mt19937& rng, size_t count) {
  std::vector<int32_t> values(count);
  for (int32_t& v : values) v = std::uniform_int_distribution<int32_t>(-1000, 1000)(rng);
  return values;
}

}  // namespace

TEST_CASE("FIFO proxies carry the ring collectives between two hosts", "[gpu][proxy]") {
  const auto how = GENERATE(TwoHosts::Proxies::kPerHost, TwoHosts::Proxies::kPerLink);
  INFO((how == TwoHosts::Proxies::kPerHost ? "a proxy per host" : "a proxy per link side"));
  TwoHosts hosts(how);
  std::mt19937 rng(20261202);
  // Counts from less than a slot to many slots per channel, an odd tail: the counters carry on
  // from one operation to the next, through the proxies too.
  for (const size_t count : {size_t{7}, size_t{5000}, size_t{40000 + 3}}) {
    INFO("count " << count);
    std::vector<std::vector<int32_t>> in(kRanks), out(kRanks);
    std::vector<const int32_t*> src;
    std::vector<int32_t*> dst;
    for (int r = 0; r < kRanks; ++r) {
      in[r] = seeded(rng, count * kRanks);
      out[r].assign(count * kRanks, 0);
      src.push_back(in[r].data());
      dst.push_back(out[r].data());
    }
    std::vector<int32_t> sum(count * kRanks, 0);
    for (int r = 0; r < kRanks; ++r)
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += in[r][i];
    const auto allOk = [](const std::vector<device::Status>& statuses) {
      for (const device::Status s : statuses)
        if (s != device::Status::kOk) return false;
      return true;
    };

    // All-reduce of count elements.
    CHECK(allOk(hosts.ring.run<device::Simple, int32_t, OpSum>(
        test::Collective::kAllReduce, test::Algorithm::kRing, src, dst, count)));
    for (int r = 0; r < kRanks; ++r)
      CHECK(std::equal(out[r].begin(), out[r].begin() + static_cast<long>(count), sum.begin()));
    // Reduce-scatter: rank r's block of the sum.
    CHECK(allOk(hosts.ring.run<device::Simple, int32_t, OpSum>(
        test::Collective::kReduceScatter, test::Algorithm::kRing, src, dst, count)));
    for (int r = 0; r < kRanks; ++r)
      CHECK(std::equal(out[r].begin(), out[r].begin() + static_cast<long>(count),
                       sum.begin() + static_cast<long>(count) * r));
    // Allgather: every rank's first count elements, in rank order.
    CHECK(allOk(hosts.ring.run<device::Simple, int32_t, OpSum>(
        test::Collective::kAllGather, test::Algorithm::kRing, src, dst, count)));
    for (int r = 0; r < kRanks; ++r)
      for (int from = 0; from < kRanks; ++from)
        CHECK(std::equal(in[from].begin(), in[from].begin() + static_cast<long>(count),
                         out[r].begin() + static_cast<long>(count) * from));
    // Broadcast from rank 2 (on host B).
    CHECK(allOk(hosts.ring.run<device::Simple, int32_t, OpSum>(
        test::Collective::kBroadcast, test::Algorithm::kRing, src, dst, count, 2)));
    for (int r = 0; r < kRanks; ++r)
      CHECK(std::equal(in[2].begin(), in[2].begin() + static_cast<long>(count), out[r].begin()));
  }
  for (const auto& proxy : hosts.proxies) CHECK(!proxy->failure());
}

TEST_CASE("FIFO proxy: a peer of another geometry or direction is refused naming it",
          "[gpu][proxy]") {
  test::DeviceRing ours(2, 1, kSlots, kSlotBytes), theirs(2, 1, kSlots * 2, kSlotBytes);
  // This side's FIFOs, the peer's, and what this side says of them.
  std::vector<device::Fifo> ourOut{ours.fifo(0, 0)}, ourIn{ours.fifo(0, 1)};
  std::vector<device::Fifo> theirOut{theirs.fifo(0, 0)}, theirIn{theirs.fifo(0, 1)};
  std::string expected;
  SECTION("slots of another count") {
    expected =
        "the GPU link proxy of host B: its FIFOs are 1 out and 1 in, of 8 slots of 1024 "
        "bytes; this side's 1 out and 1 in, of 4 of 1024";
  }
  SECTION("both sending, none receiving") {
    ourIn.clear();
    theirOut = {ours.fifo(0, 1)};
    theirIn.clear();
    expected = "its FIFOs are 1 out and 0 in, of 4 slots of 1024 bytes; this side's 1 out and 0 in";
  }
  Connected link = tcpPair();
  const Deadline deadline = Deadline::after(std::chrono::seconds(10));
  auto other = std::async(std::launch::async, [&] {
    try {
      FifoProxy proxy(std::move(link.b), theirOut, theirIn, "host A", deadline);
    } catch (const Error&) {
    }
  });
  const std::string message = tests::messageOf(ErrorCode::kRemote, [&] {
    FifoProxy proxy(std::move(link.a), ourOut, ourIn, "host B", deadline);
  });
  CHECK_THAT(message, Contains(expected));
  other.get();
}

TEST_CASE("FIFO proxy: a frame out of order or a peer gone breaks the link", "[gpu][proxy]") {
  test::DeviceRing ring(2, 1, kSlots, kSlotBytes);
  Connected link = tcpPair();
  // The peer is a raw socket: its hello, then what the case sends.
  const auto frame = [&](uint32_t kind, uint32_t channel, uint64_t value) {
    std::array<std::byte, 16> bytes{};
    ByteWriter(bytes).u32(kind).u32(channel).u64(value);
    writeAll(link.b.get(), bytes.data(), bytes.size(), Deadline::never(), "proxy");
  };
  frame(1, 1 << 16 | 1, uint64_t{kSlots} << 32 | kSlotBytes);
  FifoProxy proxy(std::move(link.a), {ring.fifo(0, 0)}, {ring.fifo(0, 1)}, "host B",
                  Deadline::after(std::chrono::seconds(10)));
  const auto brokenWith = [&](const std::string& expected) {
    for (int i = 0; i < 1000 && !proxy.failure(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    REQUIRE(proxy.failure());
    CHECK(proxy.failure()->code() == ErrorCode::kRemote);
    CHECK_THAT(proxy.failure()->what(), Contains(expected));
  };
  SECTION("a slot other than the next") {
    frame(2, 0, 3);
    brokenWith("the GPU link proxy of host B: slot 3 on channel 0, expected 0");
  }
  SECTION("a channel it does not have") {
    frame(2, 5, 0);
    brokenWith("a frame for channel 5 of 1");
  }
  SECTION("a credit for slots never sent") {
    frame(3, 0, 2);
    brokenWith("a credit of 2 slots on channel 0 (had 0, sent 0)");
  }
  SECTION("the peer closes the link") {
    shutdown(link.b.get(), SHUT_RDWR);
    brokenWith("host B");
  }
  SECTION("the peer says goodbye, then closes: no failure") {
    frame(4, 0, 0);
    shutdown(link.b.get(), SHUT_RDWR);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    CHECK_FALSE(proxy.failure());
  }
  SECTION("close() sends the slots published, then the goodbye") {
    const kernels::device::Fifo out = ring.fifo(0, 0);
    std::vector<std::byte> published(kSlotBytes);
    for (uint32_t i = 0; i < kSlotBytes; ++i) published[i] = static_cast<std::byte>(i * 7);
    std::memcpy(kernels::device::slotOf(out, 0), published.data(), kSlotBytes);
    kernels::device::Simple::publish(out, 0);
    proxy.close(std::chrono::seconds(10));
    std::vector<std::byte> got(16 + 16 + kSlotBytes + 16);
    readAll(link.b.get(), got.data(), got.size(), Deadline::after(std::chrono::seconds(10)),
            "proxy");
    ByteReader in(std::span<const std::byte>(got), ErrorCode::kRemote, "proxy");
    in.u32(), in.u32(), in.u64();  // its hello
    CHECK(in.u32() == 2);          // the slot
    CHECK(in.u32() == 0);
    CHECK(in.u64() == 0);
    std::vector<std::byte> sent(kSlotBytes);
    in.rawInto(sent);
    CHECK(sent == published);
    CHECK(in.u32() == 4);  // the goodbye
    CHECK_FALSE(proxy.failure());
  }
}
