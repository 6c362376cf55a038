// The direct offers' byte form (runtime/collectives/direct_offer.hpp): random offers (fixed seed)
// come back field for field; the leading fields sit where the layout says, little-endian; an
// offer of another version is refused naming both versions, a flag that is neither 0 nor 1 is
// refused naming it.
#include "runtime/collectives/direct_offer.hpp"

#include <catch2/catch.hpp>
#include <cstdint>
#include <random>

using namespace tutti;
using namespace tutti::runtime;

namespace {

constexpr uint64_t kSeed = 20261203;

OfferedBuffer randomBuffer(std::mt19937_64& rng) {
  OfferedBuffer buffer;
  buffer.address = rng();
  buffer.registered = rng() % 2 == 1;
  buffer.range = {rng(), rng(), rng(), static_cast<int32_t>(rng()), rng(), rng()};
  return buffer;
}

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
  offer.anyBuffers = rng() % 2 == 1;
  offer.forced = rng() % 2 == 1;
  offer.timeoutMs = rng();
  for (uint8_t& byte : offer.process.nonce) byte = static_cast<uint8_t>(rng());
  offer.process.address = rng();
  offer.send = randomBuffer(rng);
  offer.recv = randomBuffer(rng);
  return offer;
}

void checkSame(const OfferedBuffer& got, const OfferedBuffer& want) {
  CHECK(got.address == want.address);
  CHECK(got.registered == want.registered);
  CHECK(got.range.id == want.range.id);
  CHECK(got.range.device == want.range.device);
  CHECK(got.range.inode == want.range.inode);
  CHECK(got.range.fd == want.range.fd);
  CHECK(got.range.allocationBytes == want.range.allocationBytes);
  CHECK(got.range.offset == want.range.offset);
}

uint64_t littleAt(const OfferBytes& bytes, size_t at, size_t width) {
  uint64_t value = 0;
  for (size_t i = 0; i < width; ++i)
    value |= uint64_t{static_cast<uint8_t>(bytes[at + i])} << (8 * i);
  return value;
}

std::string errorOf(const OfferBytes& bytes) {
  try {
    decodeOffer(bytes, 5);
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::kRemote);
    return error.what();
  }
  FAIL("the offer decoded");
  return "";
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
    CHECK(back.anyBuffers == offer.anyBuffers);
    CHECK(back.forced == offer.forced);
    CHECK(back.timeoutMs == offer.timeoutMs);
    CHECK(back.process.nonce == offer.process.nonce);
    CHECK(back.process.address == offer.process.address);
    checkSame(back.send, offer.send);
    checkSame(back.recv, offer.recv);
  }
}

TEST_CASE("direct offers: the layout's leading fields", "[runtime][direct]") {
  Offer offer;
  offer.call.collective = 0x0a0b0c0d;
  offer.call.algorithm = 0x0102030405060708;
  offer.forced = true;
  offer.timeoutMs = 0x1122334455667788;
  const OfferBytes bytes = encodeOffer(offer);
  CHECK(littleAt(bytes, 0, 4) == kOfferVersion);
  CHECK(littleAt(bytes, 4, 4) == 0x0a0b0c0d);
  CHECK(littleAt(bytes, 4 + 40, 8) == 0x0102030405060708);  // the call's last field
  CHECK(littleAt(bytes, 52, 1) == 0);                       // anyBuffers
  CHECK(littleAt(bytes, 53, 1) == 1);                       // forced
  CHECK(littleAt(bytes, 54, 8) == 0x1122334455667788);
}

TEST_CASE("direct offers: another version or a bad flag is refused", "[runtime][direct]") {
  OfferBytes bytes = encodeOffer(Offer{});
  SECTION("another version, named with this one") {
    bytes[0] = std::byte{kOfferVersion + 1};
    CHECK_THAT(errorOf(bytes),
               Catch::StartsWith(fmt::format("rank 5's direct offer: version {}, this rank's is {}",
                                             kOfferVersion + 1, kOfferVersion)));
  }
  SECTION("a flag of 2") {
    bytes[53] = std::byte{2};
    CHECK_THAT(errorOf(bytes), Catch::Contains("forced flag of 2"));
  }
}
