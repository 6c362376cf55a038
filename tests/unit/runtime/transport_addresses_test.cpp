// The record of transport addresses each rank publishes at connection time
// (runtime/transport_addresses.hpp): random records (fixed seed) come back entry for entry;
// every truncation, trailing bytes, a duplicate name, an over-long name and an absurd count are
// refused as the peer's fault (kRemote) naming both ranks; a transport the peer did not publish
// is named.
#include "runtime/transport_addresses.hpp"

#include <catch2/catch.hpp>
#include <random>

#include "base/byte_codec.hpp"
#include "tests/error_of.hpp"
#include "tests/random_text.hpp"

using namespace tutti;
using namespace tutti::runtime;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using tutti::tests::randomText;

namespace {

constexpr uint64_t kSeed = 20261204;

std::string remoteError(const std::string& bytes) {
  return tests::messageOf(ErrorCode::kRemote, [&] { decodeTransportAddresses(bytes, 1, 3); });
}

}  // namespace

TEST_CASE("transport addresses: random records round trip", "[runtime][connections]") {
  std::mt19937_64 rng(kSeed);
  INFO("seed " << kSeed);
  for (int trial = 0; trial < 200; ++trial) {
    TransportAddresses record;
    const size_t count = rng() % 5;
    while (record.size() < count) record.emplace(randomText(rng, 12), randomText(rng, 300));
    CHECK(decodeTransportAddresses(encodeTransportAddresses(record), 1, 3) == record);
  }
}

TEST_CASE("transport addresses: a malformed record names the peer", "[runtime][connections]") {
  const std::string record =
      encodeTransportAddresses({{"shm", "tutti-shm-1234"}, {"tcp", "10.0.0.2:4242"}});
  for (size_t length = 0; length < record.size(); ++length)
    CHECK_THAT(remoteError(record.substr(0, length)),
               StartsWith("rank 1: rank 3's transport addresses: truncated"));
  CHECK_THAT(remoteError(record + "x"), Contains("1 unexpected trailing bytes"));

  ByteWriter duplicate;
  duplicate.u32(2).str("tcp").str("a:1").str("tcp").str("b:2");
  CHECK_THAT(remoteError(std::string(duplicate.bytes())), Contains("transport tcp appears twice"));
  ByteWriter longName;
  longName.u32(1).str(std::string(65, 'n')).str("a:1");
  CHECK_THAT(remoteError(std::string(longName.bytes())),
             Contains("a string of 65 bytes") && Contains("over the limit of 64"));
  ByteWriter absurd;
  absurd.u32(1u << 30);
  CHECK_THAT(remoteError(std::string(absurd.bytes())),
             Contains("1073741824 transports, over the limit of 64"));
}

TEST_CASE("transport addresses: a transport the peer did not publish is named",
          "[runtime][connections]") {
  const TransportAddresses record{{"shm", "tutti-shm-1234"}};
  CHECK(addressOf(record, "shm", 1, 3) == "tutti-shm-1234");
  CHECK_THAT(tests::messageOf(ErrorCode::kRemote, [&] { addressOf(record, "ucx", 1, 3); }),
             StartsWith("rank 1: rank 3 published no ucx address, though both chose ucx"));
}
