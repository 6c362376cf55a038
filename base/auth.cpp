#include "base/auth.hpp"

#include <sodium.h>

#include <cstring>
#include <string_view>

#include "base/error.hpp"
#include "base/socket.hpp"

namespace tutti {
namespace {

using Nonce = std::array<uint8_t, 32>;
using Mac = std::array<uint8_t, crypto_auth_BYTES>;

void initSodium() {
  static const int rc = sodium_init();
  if (rc < 0) raise(ErrorCode::kSystem, "libsodium failed to initialise");
}

// The secret hashed (BLAKE2b) under `context`, which keys the hash: one secret, unrelated
// digests for each use. A context is at least 16 bytes, libsodium's shortest key.
template <size_t N>
std::array<uint8_t, N> secretDigest(const Secret& secret, std::string_view context) {
  std::array<uint8_t, N> digest{};
  crypto_generichash(digest.data(), digest.size(), secret.bytes.data(), secret.bytes.size(),
                     reinterpret_cast<const uint8_t*>(context.data()), context.size());
  return digest;
}

std::array<uint8_t, crypto_auth_KEYBYTES> deriveKey(const Secret& secret) {
  return secretDigest<crypto_auth_KEYBYTES>(secret, "tutti job key v1");
}

// The role byte keeps a server's answer from being reflected back as a client's.
Mac answer(const Secret& secret, char role, const Nonce& challenge) {
  uint8_t message[1 + sizeof(Nonce)];
  message[0] = static_cast<uint8_t>(role);
  std::memcpy(message + 1, challenge.data(), challenge.size());
  Mac mac{};
  crypto_auth(mac.data(), message, sizeof(message), deriveKey(secret).data());
  return mac;
}

void verify(const Secret& secret, char role, const Nonce& challenge, const Mac& got,
            const std::string& what) {
  uint8_t message[1 + sizeof(Nonce)];
  message[0] = static_cast<uint8_t>(role);
  std::memcpy(message + 1, challenge.data(), challenge.size());
  if (crypto_auth_verify(got.data(), message, sizeof(message), deriveKey(secret).data()) != 0)
    raise(ErrorCode::kRemote, "{} did not prove the job secret", what);
}

Nonce freshNonce() {
  Nonce nonce;
  randombytes_buf(nonce.data(), nonce.size());
  return nonce;
}

}  // namespace

Secret Secret::random() {
  initSodium();
  Secret secret;
  randombytes_buf(secret.bytes.data(), secret.bytes.size());
  secret.present = true;
  return secret;
}

std::optional<Secret> Secret::fromHex(const std::string& text) {
  Secret secret;
  size_t length = 0;
  if (text.size() != 2 * secret.bytes.size() ||
      sodium_hex2bin(secret.bytes.data(), secret.bytes.size(), text.c_str(), text.size(), nullptr,
                     &length, nullptr) != 0 ||
      length != secret.bytes.size())
    return std::nullopt;
  secret.present = true;
  return secret;
}

std::string Secret::hex() const {
  char text[2 * sizeof(bytes) + 1];
  sodium_bin2hex(text, sizeof(text), bytes.data(), bytes.size());
  return text;
}

std::string segmentNamePrefix(const Secret& secret) {
  initSodium();
  const auto digest = secretDigest<crypto_generichash_BYTES_MIN>(secret, "tutti shm names v1");
  char hex[2 * 6 + 1];
  sodium_bin2hex(hex, sizeof(hex), digest.data(), 6);
  return std::string("tutti-") + hex + "-";
}

void authenticateAsServer(int fd, const Secret& secret, const Deadline& deadline,
                          const std::string& what) {
  if (!secret.present) return;
  initSodium();
  const Nonce challenge = freshNonce();
  writeAll(fd, challenge.data(), challenge.size(), deadline, what);
  Mac reply;
  Nonce clientChallenge;
  readAll(fd, reply.data(), reply.size(), deadline, what);
  readAll(fd, clientChallenge.data(), clientChallenge.size(), deadline, what);
  verify(secret, 'C', challenge, reply, what);
  const Mac mine = answer(secret, 'S', clientChallenge);
  writeAll(fd, mine.data(), mine.size(), deadline, what);
}

void authenticateAsClient(int fd, const Secret& secret, const Deadline& deadline,
                          const std::string& what) {
  if (!secret.present) return;
  initSodium();
  Nonce challenge;
  readAll(fd, challenge.data(), challenge.size(), deadline, what);
  const Mac mine = answer(secret, 'C', challenge);
  const Nonce myChallenge = freshNonce();
  writeAll(fd, mine.data(), mine.size(), deadline, what);
  writeAll(fd, myChallenge.data(), myChallenge.size(), deadline, what);
  Mac reply;
  readAll(fd, reply.data(), reply.size(), deadline, what);
  verify(secret, 'S', myChallenge, reply, what);
}

}  // namespace tutti
