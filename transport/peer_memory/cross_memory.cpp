#include "transport/peer_memory/cross_memory.hpp"

#include <sys/uio.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "base/log.hpp"

namespace tutti::transport {

const ProcessIdentity& thisProcess() {
  static const std::array<uint8_t, 16> nonce = [] {
    std::array<uint8_t, 16> made{};
    std::random_device entropy;
    for (uint8_t& byte : made) byte = static_cast<uint8_t>(entropy());
    return made;
  }();
  // Where a peer reads the nonce: this static's own bytes.
  static const ProcessIdentity identity{nonce, reinterpret_cast<uint64_t>(nonce.data())};
  return identity;
}

bool crossMemoryReaches(long pid, const ProcessIdentity& identity) {
  std::array<uint8_t, 16> seen{};
  if (const int error = readCrossMemory(pid, seen.data(), identity.address, seen.size())) {
    log::info(
        "the kernel does not copy from pid {}'s memory (process_vm_readv: {}): the direct "
        "algorithms need tutti_mem_alloc buffers",
        pid, std::strerror(error));
    return false;
  }
  if (seen != identity.nonce) {
    log::info("pid {} here is not the peer that published its identity (another pid namespace?)",
              pid);
    return false;
  }
  return true;
}

int readCrossMemory(long pid, void* to, uint64_t from, size_t bytes) {
  auto* here = static_cast<std::byte*>(to);
  // It may copy less than asked (a range that ends in an unmapped page): go on from there.
  while (bytes > 0) {
    iovec local{here, bytes}, remote{reinterpret_cast<void*>(from), bytes};
    const ssize_t copied = process_vm_readv(static_cast<pid_t>(pid), &local, 1, &remote, 1, 0);
    if (copied < 0 && errno == EINTR) continue;
    if (copied < 0) return errno;
    if (copied == 0) return EFAULT;
    here += copied;
    from += static_cast<uint64_t>(copied);
    bytes -= static_cast<size_t>(copied);
  }
  return 0;
}

}  // namespace tutti::transport
