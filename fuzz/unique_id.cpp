// UniqueId::decode on 128 bytes from another process (an MPI broadcast, a file, a framework's
// store). The checksum would stop the fuzzer at the door, so for inputs whose first byte is odd
// the target writes the right checksum itself and the fields behind it get explored. Whatever
// decodes must encode back to exactly the same bytes.
#include <sodium.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "fuzz/fuzz_support.hpp"
#include "runtime/bootstrap/bootstrap.hpp"

namespace {

using tutti::bootstrap::kUniqueIdBytes;
using tutti::bootstrap::UniqueId;

// The layout's checksum (runtime/bootstrap/unique_id.cpp): BLAKE2b of bytes 0..119, first 8.
constexpr size_t kChecksumAt = 120;

void fixChecksum(std::array<char, kUniqueIdBytes>& bytes) {
  uint8_t hash[crypto_generichash_BYTES_MIN];
  crypto_generichash(hash, sizeof(hash), reinterpret_cast<const uint8_t*>(bytes.data()),
                     kChecksumAt, nullptr, 0);
  std::memcpy(&bytes[kChecksumAt], hash, kUniqueIdBytes - kChecksumAt);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tutti::fuzz::discardLogs();
  if (sodium_init() < 0) tutti::fuzz::bug("libsodium failed to initialise");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool repairChecksum = data[0] & 1;
  std::array<char, kUniqueIdBytes> bytes{};
  std::memcpy(bytes.data(), data + 1, std::min(size - 1, bytes.size()));
  if (repairChecksum) fixChecksum(bytes);
  UniqueId id;
  if (!tutti::fuzz::accepts(tutti::ErrorCode::kInvalidArgument,
                            [&] { id = UniqueId::decode(bytes); }))
    return 0;
  if (id.encode() != bytes) tutti::fuzz::bug("a decoded unique id encodes to other bytes");
  return 0;
}
