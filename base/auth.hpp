// The job secret and the handshake that proves it: mutual challenge-response with HMAC
// (libsodium crypto_auth), so the secret never crosses the wire and a replayed answer is useless.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "base/deadline.hpp"

namespace tutti {

struct Secret {
  std::array<uint8_t, 16> bytes{};
  bool present = false;  // false: no secret was given; the handshake is skipped, as in NCCL

  static Secret random();
  // 32 hex digits; nullopt when malformed.
  static std::optional<Secret> fromHex(const std::string& text);
  std::string hex() const;
};

// "tutti-" and 12 hex digits of a keyed hash of the secret, then "-": how the job's shared-memory
// segments are named in /dev/shm, so that a launcher holding the secret (tuttirun) can remove what
// ranks killed in init left behind, while the names give nothing of the secret away.
std::string segmentNamePrefix(const Secret& secret);

// Both throw kRemote ("... did not prove the job secret") or kTimeout; `what` names the peer.
void authenticateAsServer(int fd, const Secret& secret, const Deadline& deadline,
                          const std::string& what);
void authenticateAsClient(int fd, const Secret& secret, const Deadline& deadline,
                          const std::string& what);

}  // namespace tutti
