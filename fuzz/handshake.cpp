// Both sides of the challenge-response handshake (base/auth.hpp) against a peer that sends the
// fuzzer's bytes and hangs up. With a secret, no such peer can answer a fresh random challenge:
// the side under test must refuse it with kRemote at once (a wrong answer or an early close),
// never accept it, crash, or sit until its deadline.
//
// Input: byte 0 picks the side (bit 0: server) and whether there is a secret (bit 1); the next
// 16 bytes are the secret; the rest is what the peer sends.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>

#include "base/auth.hpp"
#include "base/socket.hpp"
#include "fuzz/fuzz_support.hpp"

namespace {

using namespace std::chrono_literals;

constexpr size_t kSecretAt = 1;
constexpr size_t kPeerBytesAt = kSecretAt + 16;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tutti::fuzz::discardLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < kPeerBytesAt) return 0;
  const bool server = data[0] & 1;
  tutti::Secret secret;
  secret.present = data[0] & 2;
  std::memcpy(secret.bytes.data(), data + kSecretAt, secret.bytes.size());

  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) tutti::fuzz::bug("socketpair");
  const tutti::Fd mine(fds[0]), peer(fds[1]);
  // The peer's whole message fits the socket buffer (max_len is far below it); then it hangs up.
  const size_t peerBytes = size - kPeerBytesAt;
  if (peerBytes > 0 && write(peer.get(), data + kPeerBytesAt, peerBytes) != ssize_t(peerBytes))
    tutti::fuzz::bug("short write into the socket pair");
  shutdown(peer.get(), SHUT_WR);

  const auto deadline = tutti::Deadline::after(5s);
  const bool accepted = tutti::fuzz::accepts(tutti::ErrorCode::kRemote, [&] {
    if (server)
      tutti::authenticateAsServer(mine.get(), secret, deadline, "fuzz peer");
    else
      tutti::authenticateAsClient(mine.get(), secret, deadline, "fuzz peer");
  });
  if (accepted && secret.present) tutti::fuzz::bug("accepted a peer that cannot know the secret");
  return 0;
}
