// The direct offers' byte form (runtime/collectives/direct_offer.hpp): random offers (fixed seed)
// come back field for field; the leading fields sit where the layout says, little-endian; an
// offer of another version, or one whose peer-memory part (transport/peer_memory.hpp, tested in
// tests/unit/transport/peer_memory_test.cpp) is of another version, is refused naming both
// versions; a flag that is neither 0 nor 1 is refused naming it.
#include "runtime/collectives/direct_offer.hpp"

#include <catch2/catch.hpp>
#include <cstdint>
#include <random>

#include "tests/error_of.hpp"
#include "tests/unit/transport/random_memory_offer.hpp"

using namespace tutti;
using namespace tutti::runtime;

namespace {

constexpr uint64_t kSeed = 20261203;

Offer randomOffer(std::mt19937_64& rng) {
  Offer offer;
  offer.call = {static_cast<uint32_t>(rng()),
                static_cast<uint32_t>(rng()),
                static_cast<uint32_t>(rng()),
                static_cast<int32_t>(rng()),
                rng(),
                rng(),
                rng(),
                rng()};
  offer.forced = rng() % 2 == 1;
  offer.timeoutMs = rng();
  offer.memory = tests::randomMemoryOffer(rng);
  return offer;
}

std::string errorOf(const OfferBytes& bytes) {
  return tests::messageOf(ErrorCode::kRemote, [&] { decodeOffer(bytes, 5); });
}

}  // namespace

TEST_CASE("direct offers: random offers round trip", "[runtime][direct]") {
  std::mt19937_64 rng(kSeed);
  INFO("seed " << kSeed);
  for (int trial = 0; trial < 200; ++trial) {
    const Offer offer = randomOffer(rng);
    const Offer back = decodeOffer(encodeOffer(offer), 1);
    CHECK(back.call == offer.call);
    CHECK(back.call.sequence == offer.call.sequence);  // == leaves it out
    CHECK(back.forced == offer.forced);
    CHECK(back.timeoutMs == offer.timeoutMs);
    tests::checkSame(back.memory, offer.memory);
  }
}

TEST_CASE("direct offers: the layout's leading fields", "[runtime][direct]") {
  Offer offer;
  offer.call.collective = 0x0a0b0c0d;
  offer.call.algorithm = 0x0102030405060708;
  offer.forced = true;
  offer.timeoutMs = 0x1122334455667788;
  const OfferBytes bytes = encodeOffer(offer);
  CHECK(tests::littleEndianAt(bytes, 0, 4) == kOfferVersion);
  CHECK(tests::littleEndianAt(bytes, 4, 4) == 0x0a0b0c0d);
  CHECK(tests::littleEndianAt(bytes, 4 + 40, 8) == 0x0102030405060708);  // the call's last field
  CHECK(tests::littleEndianAt(bytes, 52, 1) == 1);                       // forced
  CHECK(tests::littleEndianAt(bytes, 53, 8) == 0x1122334455667788);
  CHECK(tests::littleEndianAt(bytes, 61, 4) == transport::kMemoryOfferVersion);
}

TEST_CASE("direct offers: another version or a bad flag is refused", "[runtime][direct]") {
  OfferBytes bytes = encodeOffer(Offer{});
  SECTION("another version, named with this one") {
    bytes[0] = std::byte{kOfferVersion + 1};
    CHECK_THAT(errorOf(bytes),
               Catch::StartsWith(fmt::format("rank 5's direct offer: version {}, this rank's is {}",
                                             kOfferVersion + 1, kOfferVersion)));
  }
  SECTION("a peer-memory part of another version, named with this one") {
    bytes[61] = std::byte{transport::kMemoryOfferVersion + 1};
    CHECK_THAT(errorOf(bytes),
               Catch::StartsWith(fmt::format(
                   "rank 5's direct offer: peer-memory offer version {}, this rank's is {}",
                   transport::kMemoryOfferVersion + 1, transport::kMemoryOfferVersion)));
  }
  SECTION("a flag of 2") {
    bytes[52] = std::byte{2};
    CHECK_THAT(errorOf(bytes), Catch::Contains("forced flag of 2"));
  }
}
