// The record every rank publishes at init (runtime/peer_info.hpp, PeerInfo::encode): random
// records (fixed seed) come back field for field, doubles bit for bit; every truncation, trailing
// bytes, another version and a record claiming another rank are refused as the peer's fault
// (kRemote) naming both ranks.
#include <bit>
#include <catch2/catch.hpp>
#include <random>

#include "runtime/peer_info.hpp"
#include "tests/error_of.hpp"
#include "tests/random_text.hpp"

using namespace tutti;
using namespace tutti::runtime;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using tutti::tests::randomText;

namespace {

constexpr uint64_t kSeed = 20261205;

PeerInfo randomPeer(std::mt19937_64& rng, int rank) {
  PeerInfo peer;
  peer.rank = rank;
  peer.hostName = randomText(rng, 64);
  peer.hostId = randomText(rng, 100);
  peer.pid = static_cast<long>(rng());
  peer.agreedSettings = randomText(rng, 500);
  peer.ringOrderHash = rng();
  peer.package = static_cast<int>(rng());
  peer.numa = static_cast<int>(rng());
  peer.core = static_cast<int>(rng());
  peer.smpGBs = std::bit_cast<double>(rng());  // any bits, NaNs included
  peer.netGBs = std::bit_cast<double>(rng());
  peer.rdmaPorts = static_cast<int>(rng());
  return peer;
}

std::string remoteError(const std::string& bytes) {
  return tests::messageOf(ErrorCode::kRemote, [&] { PeerInfo::decode(bytes, 1, 3); });
}

}  // namespace

TEST_CASE("peer records: random records round trip", "[runtime][peer-info]") {
  std::mt19937_64 rng(kSeed);
  INFO("seed " << kSeed);
  for (int trial = 0; trial < 200; ++trial) {
    const PeerInfo sent = randomPeer(rng, static_cast<int>(rng() % 1000));
    const PeerInfo got = PeerInfo::decode(sent.encode(), 0, sent.rank);
    CHECK(got.rank == sent.rank);
    CHECK(got.hostName == sent.hostName);
    CHECK(got.hostId == sent.hostId);
    CHECK(got.pid == sent.pid);
    CHECK(got.agreedSettings == sent.agreedSettings);
    CHECK(got.ringOrderHash == sent.ringOrderHash);
    CHECK(got.package == sent.package);
    CHECK(got.numa == sent.numa);
    CHECK(got.core == sent.core);
    CHECK(std::bit_cast<uint64_t>(got.smpGBs) == std::bit_cast<uint64_t>(sent.smpGBs));
    CHECK(std::bit_cast<uint64_t>(got.netGBs) == std::bit_cast<uint64_t>(sent.netGBs));
    CHECK(got.rdmaPorts == sent.rdmaPorts);
  }
}

TEST_CASE("peer records: a malformed record names the peer", "[runtime][peer-info]") {
  std::mt19937_64 rng(kSeed);
  const std::string record = randomPeer(rng, 3).encode();
  for (size_t length = 0; length < record.size(); ++length)
    CHECK_THAT(remoteError(record.substr(0, length)),
               StartsWith("rank 1: rank 3's peer record: truncated"));
  CHECK_THAT(remoteError(record + "x"), Contains("1 unexpected trailing bytes"));
  std::string otherVersion = record;
  otherVersion[0] = static_cast<char>(PeerInfo::kRecordVersion + 1);
  CHECK_THAT(remoteError(otherVersion),
             Contains(fmt::format("version {}, this rank's is {}", PeerInfo::kRecordVersion + 1,
                                  PeerInfo::kRecordVersion)));
  CHECK_THAT(tests::messageOf(ErrorCode::kRemote, [&] { PeerInfo::decode(record, 1, 2); }),
             StartsWith("rank 1: rank 2's peer record: it says rank 3"));
}
