// Peer-memory access (transport/peer_memory.hpp) beside what the registered-memory and
// cross-memory tests cover: how one rank reaches another's buffer, decided from the two offers;
// a view reached through the kernel copies the bytes at an offset; and the offers' byte form:
// random offers (fixed seed) come back field for field, the leading fields sit where the layout
// says, an offer of another version is refused naming both versions, a flag that is neither 0
// nor 1 is refused naming it.
#include "transport/peer_memory.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <vector>

#include "base/error.hpp"
#include "tests/error_of.hpp"
#include "tests/unit/transport/random_memory_offer.hpp"

using namespace tutti;
using namespace tutti::transport;

namespace {

constexpr uint64_t kSeed = 20261202;

using Bytes = std::array<std::byte, kMemoryOfferBytes>;

Bytes encode(const MemoryOffer& offer) {
  Bytes bytes{};
  ByteWriter out(bytes);
  writeMemoryOffer(out, offer);
  return bytes;
}

MemoryOffer decode(const Bytes& bytes) {
  ByteReader in(bytes, ErrorCode::kRemote, "rank 5's offer");
  MemoryOffer offer = readMemoryOffer(in);
  in.end();
  return offer;
}

std::string errorOf(const Bytes& bytes) {
  return tests::messageOf(ErrorCode::kRemote, [&] { decode(bytes); });
}

}  // namespace

TEST_CASE("peer memory: how a rank reaches another's buffer", "[transport][peer-memory]") {
  const std::vector<char> ordinary(64);
  MemoryOffer here = PeerMemory::offer(true, ordinary.data(), ordinary.size(), nullptr, 0);
  CHECK_FALSE(here.send.registered);
  CHECK(here.send.address == reinterpret_cast<uint64_t>(ordinary.data()));
  MemoryOffer there = here;
  there.process.nonce[15] ^= 1;  // another process
  CHECK(reachOf(here, here, here.send) == BufferReach::kAddress);
  CHECK(reachOf(here, there, there.send) == BufferReach::kKernel);
  there.anyBuffers = false;  // registered memory only, on either side
  CHECK(reachOf(here, there, there.send) == BufferReach::kNone);
  CHECK(reachOf(there, here, here.send) == BufferReach::kNone);
  there.send.registered = true;
  CHECK(reachOf(here, there, there.send) == BufferReach::kMapping);
  there.process = here.process;  // the same process: its address, registered or not
  CHECK(reachOf(here, there, there.send) == BufferReach::kAddress);
}

TEST_CASE("peer memory: a view through the kernel copies from its offset",
          "[transport][peer-memory]") {
  std::vector<uint8_t> source(5000);
  std::mt19937_64 rng(kSeed);
  for (uint8_t& byte : source) byte = static_cast<uint8_t>(rng());
  const MemoryOffer owner = PeerMemory::offer(true, source.data(), source.size(), nullptr, 0);
  MemoryOffer reader = owner;
  reader.process.nonce[0] ^= 1;
  PeerMemory memory;
  // This process's own pid: the kernel copies from it as from a peer's.
  const auto view = memory.open(1, getpid(), reader, owner, owner.send, source.size());
  REQUIRE(view);
  CHECK(view->local == nullptr);
  std::vector<uint8_t> seen(3000);
  REQUIRE(view->copyTo(1234, seen.data(), seen.size()) == 0);
  CHECK(std::equal(seen.begin(), seen.end(), source.begin() + 1234));
  // A view at its address copies too.
  const auto same = memory.open(1, getpid(), owner, owner, owner.send, source.size());
  REQUIRE(same);
  CHECK(same->local == reinterpret_cast<std::byte*>(source.data()));
  std::vector<uint8_t> copied(10);
  REQUIRE(same->copyTo(4990, copied.data(), copied.size()) == 0);
  CHECK(std::equal(copied.begin(), copied.end(), source.begin() + 4990));
}

TEST_CASE("peer-memory offers: random offers round trip", "[transport][peer-memory]") {
  std::mt19937_64 rng(kSeed);
  INFO("seed " << kSeed);
  for (int trial = 0; trial < 200; ++trial) {
    const MemoryOffer offer = tests::randomMemoryOffer(rng);
    tests::checkSame(decode(encode(offer)), offer);
  }
}

TEST_CASE("peer-memory offers: the layout's leading fields", "[transport][peer-memory]") {
  MemoryOffer offer;
  offer.anyBuffers = true;
  offer.process.address = 0x1122334455667788;
  offer.send.address = 0x0102030405060708;
  const Bytes bytes = encode(offer);
  auto littleAt = [&](size_t at, size_t width) { return tests::littleEndianAt(bytes, at, width); };
  CHECK(littleAt(0, 4) == kMemoryOfferVersion);
  CHECK(littleAt(4, 1) == 1);  // anyBuffers
  CHECK(littleAt(4 + 1 + 16, 8) == 0x1122334455667788);
  CHECK(littleAt(4 + 1 + 16 + 8, 8) == 0x0102030405060708);
}

TEST_CASE("peer-memory offers: another version or a bad flag is refused",
          "[transport][peer-memory]") {
  Bytes bytes = encode(MemoryOffer{});
  SECTION("another version, named with this one") {
    bytes[0] = std::byte{kMemoryOfferVersion + 1};
    CHECK_THAT(errorOf(bytes),
               Catch::StartsWith(
                   fmt::format("rank 5's offer: peer-memory offer version {}, this rank's is {}",
                               kMemoryOfferVersion + 1, kMemoryOfferVersion)));
  }
  SECTION("an anyBuffers flag of 2") {
    bytes[4] = std::byte{2};
    CHECK_THAT(errorOf(bytes), Catch::Contains("anyBuffers flag of 2"));
  }
  SECTION("a registered flag of 3") {
    bytes[4 + 1 + 16 + 8 + 8] = std::byte{3};
    CHECK_THAT(errorOf(bytes), Catch::Contains("registered flag of 3"));
  }
}
