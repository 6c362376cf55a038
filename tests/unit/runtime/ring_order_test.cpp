// The ring the ring and chain collectives follow: TUTTI_RING_ORDER's parsing and checks, the plan
// with a given order, the ring seen from each rank (RingView: neighbours, positions, distances
// from a root) for the identity and for permuted orders, and the order's fingerprint in peer
// records.
#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>
#include <numeric>
#include <random>

#include "base/error.hpp"
#include "runtime/collectives/ring_view.hpp"
#include "runtime/peer_info.hpp"
#include "runtime/topology_plan.hpp"
#include "tests/error_of.hpp"

using tutti::Error;
using tutti::ErrorCode;
using namespace tutti::runtime;
using Catch::Matchers::Contains;

namespace {

// n ranks on one host; places (package, NUMA node, core) unknown unless given.
std::vector<PeerInfo> peersOnOneHost(int n, const std::vector<int>& cores = {}) {
  std::vector<PeerInfo> peers(static_cast<size_t>(n));
  for (int rank = 0; rank < n; ++rank) {
    PeerInfo& peer = peers[static_cast<size_t>(rank)];
    peer.rank = rank;
    peer.hostName = "h";
    peer.hostId = "h/boot/net";
    if (!cores.empty()) {
      peer.package = peer.numa = 0;
      peer.core = cores[static_cast<size_t>(rank)];
    }
  }
  return peers;
}

CpuRing ringOf(const std::vector<int>& order) {
  return planCpuRing(peersOnOneHost(static_cast<int>(order.size())),
                     tutti::transport::TransportSelection::parse("shm"), defaultTuning(), order);
}

// What the invalid-argument error `body` throws says.
std::string errorOf(const std::function<void()>& body) {
  const Error error = tutti::tests::errorOf(body);
  CHECK(error.code() == ErrorCode::kInvalidArgument);
  return error.what();
}

}  // namespace

TEST_CASE("TUTTI_RING_ORDER is ranks separated by spaces or commas") {
  CHECK(parseRingOrder("").empty());
  CHECK(parseRingOrder(" , ").empty());
  CHECK(parseRingOrder("2 0 1") == std::vector<int>{2, 0, 1});
  CHECK(parseRingOrder("3,1, 0 ,2") == std::vector<int>{3, 1, 0, 2});
  CHECK(parseRingOrder(" 7 ") == std::vector<int>{7});
}

TEST_CASE("a malformed TUTTI_RING_ORDER is an error naming the variable and the value") {
  const std::pair<const char*, const char*> bad =
      GENERATE(std::make_pair("0 x 2", "'x' is not a rank"), std::make_pair("-1 0", "'-1'"),
               std::make_pair("+1 0", "'+1'"), std::make_pair("1e3", "'1e3'"),
               std::make_pair("0 99999999999", "'99999999999'"),
               std::make_pair("0;1", "'0;1' is not a rank"),
               std::make_pair("0 1 1", "rank 1 appears twice"));
  const std::string message = errorOf([&] { parseRingOrder(bad.first); });
  CHECK_THAT(message,
             Contains(std::string("TUTTI_RING_ORDER='") + bad.first + "'") && Contains(bad.second));
}

TEST_CASE("a given order is the ring when it names every rank once") {
  const CpuRing ring = ringOf({2, 0, 3, 1});
  CHECK(ring.given);
  CHECK(ring.order == std::vector<int>{2, 0, 3, 1});
  CHECK(ring.position == std::vector<int>{1, 3, 0, 2});
  CHECK(std::string(ring.via) == "SHM");
  CHECK(ring.bw == defaultTuning().shmGBs);
  const std::vector<int> notARing = GENERATE(
      std::vector<int>{0, 1, 2}, std::vector<int>{0, 1, 2, 4}, std::vector<int>{0, 1, 2, 3, 4});
  const std::string message = errorOf([&] {
    planCpuRing(peersOnOneHost(4), tutti::transport::TransportSelection::parse("shm"),
                defaultTuning(), notARing);
  });
  CHECK_THAT(message, Contains("TUTTI_RING_ORDER='" + formatRanks(notARing) + "'") &&
                          Contains("4 ranks") && Contains("each of 0..3 once"));
}

TEST_CASE("without a given order the ring is planned by place") {
  CpuRing ring = planCpuRing(peersOnOneHost(4), tutti::transport::TransportSelection::parse("shm"),
                             defaultTuning());
  CHECK_FALSE(ring.given);
  CHECK(ring.order == std::vector<int>{0, 1, 2, 3});
  CHECK(ring.position == std::vector<int>{0, 1, 2, 3});
  ring = planCpuRing(peersOnOneHost(4, {1, 0, 1, 0}),
                     tutti::transport::TransportSelection::parse("shm"), defaultTuning());
  CHECK(ring.order == std::vector<int>{1, 3, 0, 2});
  CHECK(ring.position == std::vector<int>{2, 0, 3, 1});
}

TEST_CASE("the identity ring is rank order seen from every rank") {
  const int n = GENERATE(1, 2, 3, 5, 8);
  std::vector<int> identity(static_cast<size_t>(n));
  std::iota(identity.begin(), identity.end(), 0);
  for (const CpuRing& ring :
       {ringOf(identity),
        planCpuRing(peersOnOneHost(n), tutti::transport::TransportSelection::parse("tcp"),
                    defaultTuning())}) {
    for (int rank = 0; rank < n; ++rank) {
      const RingView view(ring, rank);
      CHECK(view.n == n);
      CHECK(view.position == rank);
      CHECK(view.next == (rank + 1) % n);
      CHECK(view.prev == (rank + n - 1) % n);
      for (int origin = 0; origin < n; ++origin)
        CHECK(view.distanceFrom(origin) == (rank - origin + n) % n);
      for (long at = -n; at < 2 * n; ++at) CHECK(view.rankAt(at) == (at % n + n) % n);
    }
  }
}

TEST_CASE("a permuted ring: neighbours, positions and distances follow the order") {
  const CpuRing ring = ringOf({2, 0, 3, 1});
  const RingView zero(ring, 0);  // 2 [0] 3 1
  CHECK(zero.position == 1);
  CHECK(zero.prev == 2);
  CHECK(zero.next == 3);
  CHECK(zero.distanceFrom(2) == 1);
  CHECK(zero.distanceFrom(0) == 0);
  CHECK(zero.distanceFrom(1) == 2);
  const RingView one(ring, 1);  // wraps around: 1 → 2
  CHECK(one.next == 2);
  CHECK(one.prev == 3);

  // Random orders: walking `next` visits the order, `prev` undoes `next`, and the distance from a
  // root counts the hops from it along the ring.
  const int n = GENERATE(2, 3, 5, 8);
  std::mt19937_64 rng(static_cast<uint64_t>(n) * 31);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<int> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    const CpuRing permuted = ringOf(order);
    for (int rank = 0; rank < n; ++rank) {
      const RingView view(permuted, rank);
      CHECK(order[static_cast<size_t>(view.position)] == rank);
      CHECK(view.rankAt(view.position) == rank);
      CHECK(view.next == order[static_cast<size_t>((view.position + 1) % n)]);
      CHECK(RingView(permuted, view.next).prev == rank);
      for (int root = 0; root < n; ++root) {
        int hops = 0;
        for (int at = root; at != rank; at = RingView(permuted, at).next) ++hops;
        CHECK(view.distanceFrom(root) == hops);
      }
    }
  }
}

TEST_CASE("peer records carry a fingerprint of the given order") {
  auto withOrder = [](int rank, std::vector<int> order) {
    Settings settings;
    settings.ringOrder = std::move(order);
    return PeerInfo::local(rank, settings);
  };
  const PeerInfo unset = withOrder(0, {});
  const PeerInfo given = withOrder(0, {3, 0, 2, 1});
  CHECK(unset.ringOrderHash == 0);
  CHECK(given.ringOrderHash != 0);
  CHECK(withOrder(1, {3, 0, 2, 1}).ringOrderHash == given.ringOrderHash);
  CHECK(withOrder(1, {3, 0, 1, 2}).ringOrderHash != given.ringOrderHash);
  CHECK(withOrder(1, {3, 0, 2}).ringOrderHash != given.ringOrderHash);
  CHECK(PeerInfo::decode(given.encode(), 1, 0).ringOrderHash == given.ringOrderHash);
  CHECK(PeerInfo::decode(unset.encode(), 1, 0).ringOrderHash == 0);
}
