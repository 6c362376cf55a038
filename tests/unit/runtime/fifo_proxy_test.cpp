// The proxy of a link between hosts (runtime/gpu/fifo_proxy.hpp) under the device protocol's
// schedules, CPU threads standing in for thread blocks (tests/unit/kernels/device_ring.hpp): four
// ranks as two "hosts" of two, the ring's two links between them split, their slots moved by a
// proxy on each side over a real TCP connection on loopback. Every ring collective, several
// operations in a row (the counters carry on), against sums computed here (int32: exact); then
// what breaks a link: a peer of another geometry, a frame out of order, a peer that goes away.
#include "base/byte_codec.hpp"
#include "runtime/gpu/fifo_proxy.hpp"

#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <future>
#include <numeric>
#include <random>
#include <vector>

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

// Host A holds ranks 0 and 1, host B ranks 2 and 3: the links 1 -> 2 and 3 -> 0 cross.
struct TwoHosts {
  test::DeviceRing ring{kRanks, kChannels, kSlots, kSlotBytes};
  std::unique_ptr<FifoProxy> a, b;

  TwoHosts() {
    ring.splitLink(1);
    ring.splitLink(3);
    Connected link = tcpPair();
    std::vector<device::Fifo> sentByA, receivedByA, sentByB, receivedByB;
    for (int c = 0; c < kChannels; ++c) {
      sentByA.push_back(ring.sendingFifo(c, 1));
      receivedByA.push_back(ring.fifo(c, 3));
      sentByB.push_back(ring.sendingFifo(c, 3));
      receivedByB.push_back(ring.fifo(c, 1));
    }
    const Deadline deadline = Deadline::after(std::chrono::seconds(10));
    // Each waits for the other's hello: made side by side.
    auto madeB = std::async(std::launch::async, [&] {
      return std::make_unique<FifoProxy>(std::move(link.b), sentByB, receivedByB, "host A",
                                         deadline);
    });
    a = std::make_unique<FifoProxy>(std::move(link.a), sentByA, receivedByA, "host B", deadline);
    b = madeB.get();
  }
};

std::vector<int32_t> seeded(std::mt19937& rng, size_t count) {
  std::vector<int32_t> values(count);
  for (int32_t& v : values) v = std::uniform_int_distribution<int32_t>(-1000, 1000)(rng);
  return values;
}

}  // namespace

TEST_CASE("FIFO proxies carry the ring collectives between two hosts", "[gpu][proxy]") {
  TwoHosts hosts;
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
  CHECK(!hosts.a->failure());
  CHECK(!hosts.b->failure());
}

TEST_CASE("FIFO proxy: a peer of another geometry is refused naming it", "[gpu][proxy]") {
  test::DeviceRing ours(2, 1, kSlots, kSlotBytes), theirs(2, 1, kSlots * 2, kSlotBytes);
  Connected link = tcpPair();
  const Deadline deadline = Deadline::after(std::chrono::seconds(10));
  auto other = std::async(std::launch::async, [&] {
    try {
      FifoProxy proxy(std::move(link.b), {theirs.fifo(0, 0)}, {theirs.fifo(0, 1)}, "host A",
                      deadline);
    } catch (const Error&) {
    }
  });
  const std::string message = tests::messageOf(ErrorCode::kRemote, [&] {
    FifoProxy proxy(std::move(link.a), {ours.fifo(0, 0)}, {ours.fifo(0, 1)}, "host B", deadline);
  });
  CHECK_THAT(message, Contains("the GPU link proxy of host B: its FIFOs are 1 channels of 8 "
                               "slots of 1024 bytes, this side's 1 of 4 of 1024"));
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
  frame(1, 1, uint64_t{kSlots} << 32 | kSlotBytes);
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
}
