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
//       92    28  reserved, zero
//      120     8  checksum: BLAKE2b of bytes 0..119, first 8 bytes
//
// decode() checks every field, so bytes that are not a unique id (a truncated copy, another
// library's id, a corrupted broadcast) fail here with a message instead of hanging a connect.
#include <arpa/inet.h>
#include <sodium.h>

#include <cstring>

#include "base/error.hpp"
#include "runtime/bootstrap/bootstrap.hpp"

namespace tutti::bootstrap {
namespace {

constexpr char kMagic[4] = {'T', 'U', 'T', 'I'};
constexpr uint16_t kVersion = 1;
constexpr size_t kFamilyAt = 6, kPresentAt = 7, kPortAt = 8, kReservedAt = 10, kSecretAt = 12;
constexpr size_t kHostAt = 28, kHostBytes = 64, kTailAt = 92, kChecksumAt = 120;
constexpr size_t kChecksumBytes = 8;

using Bytes = std::array<char, kUniqueIdBytes>;

std::array<uint8_t, kChecksumBytes> checksum(const Bytes& bytes) {
  static const int sodium = sodium_init();
  if (sodium < 0) raise(ErrorCode::kSystem, "libsodium failed to initialise");
  uint8_t hash[crypto_generichash_BYTES_MIN];
  crypto_generichash(hash, sizeof(hash), reinterpret_cast<const uint8_t*>(bytes.data()),
                     kChecksumAt, nullptr, 0);
  std::array<uint8_t, kChecksumBytes> out{};
  std::memcpy(out.data(), hash, out.size());
  return out;
}

int familyOf(const std::string& host) {
  in6_addr scratch{};
  if (inet_pton(AF_INET, host.c_str(), &scratch) == 1) return 4;
  if (inet_pton(AF_INET6, host.c_str(), &scratch) == 1) return 6;
  return 0;
}

[[noreturn]] void reject(const std::string& why) {
  raise(ErrorCode::kInvalidArgument, "not a tutti unique id ({})", why);
}

bool allZero(const Bytes& bytes, size_t from, size_t to) {
  for (size_t i = from; i < to; ++i)
    if (bytes[i] != 0) return false;
  return true;
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
  std::memcpy(bytes.data(), kMagic, sizeof(kMagic));
  bytes[4] = static_cast<char>(kVersion & 0xff);
  bytes[5] = static_cast<char>(kVersion >> 8);
  bytes[kFamilyAt] = static_cast<char>(family);
  bytes[kPresentAt] = secret.present ? 1 : 0;
  bytes[kPortAt] = static_cast<char>(port & 0xff);
  bytes[kPortAt + 1] = static_cast<char>(port >> 8);
  if (secret.present) std::memcpy(&bytes[kSecretAt], secret.bytes.data(), secret.bytes.size());
  std::memcpy(&bytes[kHostAt], host.data(), host.size());
  const auto sum = checksum(bytes);
  std::memcpy(&bytes[kChecksumAt], sum.data(), sum.size());
  return bytes;
}

UniqueId UniqueId::decode(const std::array<char, kUniqueIdBytes>& bytes) {
  if (std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) reject("bad magic");
  const int version = static_cast<uint8_t>(bytes[4]) | (static_cast<uint8_t>(bytes[5]) << 8);
  if (version != kVersion) reject(fmt::format("version {}, expected {}", version, kVersion));
  const int family = static_cast<uint8_t>(bytes[kFamilyAt]);
  if (family != 4 && family != 6) reject(fmt::format("address family {}", family));
  const int present = static_cast<uint8_t>(bytes[kPresentAt]);
  if (present > 1) reject(fmt::format("secret flag {}", present));
  UniqueId id;
  id.port = static_cast<uint8_t>(bytes[kPortAt]) | (static_cast<uint8_t>(bytes[kPortAt + 1]) << 8);
  if (id.port == 0) reject("port 0");
  if (!allZero(bytes, kReservedAt, kSecretAt) || !allZero(bytes, kTailAt, kChecksumAt))
    reject("reserved bytes are not zero");
  if (!present && !allZero(bytes, kSecretAt, kSecretAt + 16)) reject("secret bytes without flag");
  const char* host = &bytes[kHostAt];
  const size_t hostLength = strnlen(host, kHostBytes);
  if (hostLength == kHostBytes) reject("host is not NUL-terminated");
  if (hostLength == 0) reject("empty host");
  if (!allZero(bytes, kHostAt + hostLength, kHostAt + kHostBytes))
    reject("bytes after the host's NUL");
  id.host.assign(host, hostLength);
  if (familyOf(id.host) != family)
    reject(fmt::format("host is not a numeric IPv{} address", family));
  const auto sum = checksum(bytes);
  if (std::memcmp(sum.data(), &bytes[kChecksumAt], sum.size()) != 0) reject("checksum mismatch");
  id.secret.present = present == 1;
  if (id.secret.present)
    std::memcpy(id.secret.bytes.data(), &bytes[kSecretAt], id.secret.bytes.size());
  return id;
}

}  // namespace tutti::bootstrap
