#include <cstring>

#include "helpers.hpp"

namespace tutti::bootstrap {
namespace {

using testing::errorOf;

UniqueId sample() {
  UniqueId id;
  id.host = "192.0.2.17";
  id.port = 40123;
  id.secret = Secret::random();
  return id;
}

// Decoding must fail with kInvalidArgument and a message containing `why`.
void expectRejected(const std::array<char, kUniqueIdBytes>& bytes, const std::string& why) {
  const Error error = errorOf([&] { UniqueId::decode(bytes); });
  CHECK(error.code() == ErrorCode::kInvalidArgument);
  CHECK_THAT(error.what(), Catch::Contains("not a tutti unique id"));
  CHECK_THAT(error.what(), Catch::Contains(why));
}

TEST_CASE("unique id round trip", "[bootstrap][unique_id]") {
  SECTION("IPv4 with a secret") {
    const UniqueId id = sample();
    const UniqueId back = UniqueId::decode(id.encode());
    CHECK(back.host == id.host);
    CHECK(back.port == id.port);
    CHECK(back.secret.present);
    CHECK(back.secret.bytes == id.secret.bytes);
    CHECK(back.joinKey.empty());
  }
  SECTION("a grow token's join key, up to 27 hex digits") {
    UniqueId id = sample();
    id.joinKey = "0123456789abcdef0123456789a";
    CHECK(UniqueId::decode(id.encode()).joinKey == id.joinKey);
  }
  SECTION("IPv6 without a secret") {
    UniqueId id;
    id.host = "fd00::2";
    id.port = 1;
    const UniqueId back = UniqueId::decode(id.encode());
    CHECK(back.host == "fd00::2");
    CHECK(back.port == 1);
    CHECK_FALSE(back.secret.present);
  }
  SECTION("the longest IPv6 text") {
    UniqueId id;
    id.host = "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255";
    id.port = 65535;
    CHECK(UniqueId::decode(id.encode()).host == id.host);
  }
  SECTION("the layout: magic, version, family, flag, port") {
    const auto bytes = sample().encode();
    CHECK(std::memcmp(bytes.data(), "TUTI", 4) == 0);
    CHECK(bytes[4] == 1);
    CHECK(bytes[5] == 0);
    CHECK(bytes[6] == 4);
    CHECK(bytes[7] == 1);
    CHECK((static_cast<uint8_t>(bytes[8]) | static_cast<uint8_t>(bytes[9]) << 8) == 40123);
    CHECK(std::string(&bytes[28]) == "192.0.2.17");
  }
}

TEST_CASE("unique id encode refuses what it cannot represent", "[bootstrap][unique_id]") {
  UniqueId id = sample();
  id.host = "rendezvous.example";
  CHECK(errorOf([&] { id.encode(); }).code() == ErrorCode::kInvalidArgument);
  id = sample();
  id.port = 0;
  CHECK(errorOf([&] { id.encode(); }).code() == ErrorCode::kInvalidArgument);
  id.port = 65536;
  CHECK(errorOf([&] { id.encode(); }).code() == ErrorCode::kInvalidArgument);
  id = sample();
  id.joinKey = "0123456789abcdef0123456789ab";  // 28 digits: no room for the NUL
  CHECK(errorOf([&] { id.encode(); }).code() == ErrorCode::kInvalidArgument);
  id.joinKey = "G00D";
  CHECK(errorOf([&] { id.encode(); }).code() == ErrorCode::kInvalidArgument);
}

TEST_CASE("unique id decode rejects each corrupted field", "[bootstrap][unique_id]") {
  const auto good = sample().encode();
  auto bytes = good;
  SECTION("magic") {
    bytes[0] = 'X';
    expectRejected(bytes, "bad magic");
  }
  SECTION("version") {
    bytes[4] = 2;
    expectRejected(bytes, "version 2");
  }
  SECTION("address family") {
    bytes[6] = 5;
    expectRejected(bytes, "address family 5");
  }
  SECTION("family that disagrees with the host") {
    bytes[6] = 6;
    expectRejected(bytes, "not a numeric IPv6 address");
  }
  SECTION("secret flag") {
    bytes[7] = 2;
    expectRejected(bytes, "secret flag 2");
  }
  SECTION("port 0") {
    bytes[8] = 0;
    bytes[9] = 0;
    expectRejected(bytes, "port 0");
  }
  SECTION("reserved bytes") {
    bytes[10] = 1;
    expectRejected(bytes, "reserved");
  }
  SECTION("join key") {
    bytes[100] = 1;  // after an empty key's NUL
    expectRejected(bytes, "join key is not NUL-terminated and zero-padded");
    bytes = good;
    bytes[92] = 'x';
    expectRejected(bytes, "join key is not hex");
  }
  SECTION("secret bytes without the flag") {
    UniqueId id = sample();
    id.secret = Secret();
    bytes = id.encode();
    bytes[12] = 7;
    expectRejected(bytes, "secret bytes without flag");
  }
  SECTION("a secret byte: only the checksum can tell") {
    bytes[20] ^= 1;
    expectRejected(bytes, "checksum");
  }
  SECTION("host without NUL") {
    std::memset(&bytes[28], 'a', 64);
    expectRejected(bytes, "NUL-terminated");
  }
  SECTION("empty host") {
    std::memset(&bytes[28], 0, 64);
    expectRejected(bytes, "empty host");
  }
  SECTION("bytes after the host") {
    bytes[28 + 40] = 'x';
    expectRejected(bytes, "after the host");
  }
  SECTION("host that is not numeric") {
    std::memcpy(&bytes[28], "192.0.2.x7", 10);
    expectRejected(bytes, "not a numeric IPv4 address");
  }
  SECTION("host changed to another valid address") {
    bytes[28 + 9] = '8';  // 192.0.2.18
    expectRejected(bytes, "checksum");
  }
  SECTION("checksum") {
    bytes[127] ^= 0x40;
    expectRejected(bytes, "checksum");
  }
}

TEST_CASE("unique id decode rejects every single-byte change", "[bootstrap][unique_id]") {
  const auto good = sample().encode();
  for (size_t i = 0; i < kUniqueIdBytes; ++i) {
    for (const int flip : {0x01, 0x80}) {
      auto bytes = good;
      bytes[i] = static_cast<char>(bytes[i] ^ flip);
      INFO("byte " << i << " xor " << flip);
      CHECK(errorOf([&] { UniqueId::decode(bytes); }).code() == ErrorCode::kInvalidArgument);
    }
  }
  std::array<char, kUniqueIdBytes> zeros{};
  CHECK_THROWS_AS(UniqueId::decode(zeros), Error);
}

}  // namespace
}  // namespace tutti::bootstrap
