// The unique id: 128 bytes that name the rendezvous and carry the job secret.
//
//   offset  size  field
//        0     4  magic "TUTI"
//        4     2  version (little-endian), 1
//        6     1  address family: 4 or 6
//        7     1  secret present: 0 or 1
//        8     2  port (little-endian), 1..65535
//       10     2  reserved, zero
//       12    16  secret (zero when absent)
//       28    64  numeric host, NUL-terminated, zero-padded
//       92    28  join key of a grow token (tutti_comm_grow_id): lowercase hex, NUL-padded;
//                 all zero in a plain id
//      120     8  checksum: BLAKE2b of bytes 0..119, first 8 bytes
//
// decode() checks every field, so bytes that are not a unique id (a truncated copy, another
// library's id, a corrupted broadcast) fail here with a message instead of hanging a connect.
#include <arpa/inet.h>
#include <sodium.h>

#include <algorithm>
#include <cstring>

#include "base/byte_codec.hpp"
#include "base/error.hpp"
#include "runtime/bootstrap/bootstrap.hpp"

namespace tutti::bootstrap {
namespace {

constexpr std::string_view kMagic = "TUTI";
constexpr uint16_t kVersion = 1;
constexpr size_t kHostBytes = 64, kTailBytes = 28, kChecksumAt = 120;
constexpr size_t kChecksumBytes = 8;

using Bytes = std::array<char, kUniqueIdBytes>;

std::array<std::byte, kChecksumBytes> checksum(const Bytes& bytes) {
  static const int sodium = sodium_init();
  if (sodium < 0) raise(ErrorCode::kSystem, "libsodium failed to initialise");
  uint8_t hash[crypto_generichash_BYTES_MIN];
  crypto_generichash(hash, sizeof(hash), reinterpret_cast<const uint8_t*>(bytes.data()),
                     kChecksumAt, nullptr, 0);
  std::array<std::byte, kChecksumBytes> out{};
  std::memcpy(out.data(), hash, out.size());
  return out;
}

int familyOf(const std::string& host) {
  in6_addr scratch{};
  if (inet_pton(AF_INET, host.c_str(), &scratch) == 1) return 4;
  if (inet_pton(AF_INET6, host.c_str(), &scratch) == 1) return 6;
  return 0;
}

bool allZero(std::span<const std::byte> bytes) {
  return std::ranges::all_of(bytes, [](std::byte b) { return b == std::byte{0}; });
}

bool isLowerHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

bool same(std::span<const std::byte> a, std::span<const std::byte> b) {
  return std::ranges::equal(a, b);
}

}  // namespace

std::array<char, kUniqueIdBytes> UniqueId::encode() const {
  const int family = familyOf(host);
  if (family == 0 || host.size() >= kHostBytes)
    raise(ErrorCode::kInvalidArgument, "unique id host '{}' is not a numeric IPv4/IPv6 address",
          host);
  if (port < 1 || port > 65535)
    raise(ErrorCode::kInvalidArgument, "unique id port {} is out of range [1, 65535]", port);
  Bytes bytes{};
  ByteWriter out(std::as_writable_bytes(std::span(bytes)));
  out.raw(kMagic)
      .u16(kVersion)
      .u8(static_cast<uint8_t>(family))
      .u8(secret.present ? 1 : 0)
      .u16(static_cast<uint16_t>(port))
      .zeros(2);
  if (secret.present)
    out.raw(std::as_bytes(std::span(secret.bytes)));
  else
    out.zeros(secret.bytes.size());
  if (joinKey.size() >= kTailBytes || !std::ranges::all_of(joinKey, isLowerHex))
    raise(ErrorCode::kInvalidArgument, "unique id join key '{}' is not up to {} hex digits",
          joinKey, kTailBytes - 1);
  out.raw(host).zeros(kHostBytes - host.size()).raw(joinKey).zeros(kTailBytes - joinKey.size());
  out.raw(checksum(bytes));
  return bytes;
}

UniqueId UniqueId::decode(const std::array<char, kUniqueIdBytes>& bytes) {
  ByteReader in(std::as_bytes(std::span(bytes)), ErrorCode::kInvalidArgument,
                "not a tutti unique id");
  if (!same(in.raw(kMagic.size()), std::as_bytes(std::span(kMagic)))) in.fail("bad magic");
  const uint16_t version = in.u16();
  if (version != kVersion) in.fail("version {}, expected {}", version, kVersion);
  const int family = in.u8();
  if (family != 4 && family != 6) in.fail("address family {}", family);
  const int present = in.u8();
  if (present > 1) in.fail("secret flag {}", present);
  UniqueId id;
  id.port = in.u16();
  if (id.port == 0) in.fail("port 0");
  const auto reserved = in.raw(2);
  const auto secretBytes = in.raw(id.secret.bytes.size());
  const auto hostBytes = in.raw(kHostBytes);
  const auto tail = in.raw(kTailBytes);
  const auto sum = in.raw(kChecksumBytes);
  in.end();
  if (!allZero(reserved)) in.fail("reserved bytes are not zero");
  if (!present && !allZero(secretBytes)) in.fail("secret bytes without flag");
  const char* host = reinterpret_cast<const char*>(hostBytes.data());
  const size_t hostLength = strnlen(host, kHostBytes);
  if (hostLength == kHostBytes) in.fail("host is not NUL-terminated");
  if (hostLength == 0) in.fail("empty host");
  if (!allZero(hostBytes.subspan(hostLength))) in.fail("bytes after the host's NUL");
  id.host.assign(host, hostLength);
  const char* key = reinterpret_cast<const char*>(tail.data());
  const size_t keyLength = strnlen(key, kTailBytes);
  if (keyLength == kTailBytes || !allZero(tail.subspan(keyLength)))
    in.fail("join key is not NUL-terminated and zero-padded");
  id.joinKey.assign(key, keyLength);
  if (!std::ranges::all_of(id.joinKey, isLowerHex)) in.fail("join key is not hex");
  if (familyOf(id.host) != family) in.fail("host is not a numeric IPv{} address", family);
  if (!same(sum, checksum(bytes))) in.fail("checksum mismatch");
  id.secret.present = present == 1;
  if (id.secret.present)
    std::ranges::copy(secretBytes, reinterpret_cast<std::byte*>(id.secret.bytes.data()));
  return id;
}

}  // namespace tutti::bootstrap
