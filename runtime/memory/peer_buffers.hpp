// What a communicator keeps for reaching its peers' memory on this host. Their registered memory,
// mapped into this process on first use and kept for the communicator's life (a bucket is
// all-reduced every iteration); one mapping per peer file descriptor: a peer that frees an
// allocation and gets the same descriptor number for a new one replaces the old mapping rather
// than adding to it. And for their ordinary memory, copied through the kernel
// (cross_memory.hpp): whether that works, and where the copies land.
#pragma once

#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "runtime/memory/registered_memory.hpp"
#include "transport/shm/segment.hpp"

namespace tutti::runtime {

class PeerBuffers {
 public:
  // The peer's range [range.offset, range.offset + bytes) in this process, or nullptr when it
  // cannot be mapped here (no access to the peer's /proc entry, another pid namespace, a file
  // that is not the one described): the caller then copies through the FIFOs instead.
  std::byte* map(int peer, long pid, const RegisteredRange& range, size_t bytes);

  // Whether the kernel copies from and to every peer's ordinary memory: nullopt until the ranks
  // have found out together, at the first direct call that needs it.
  std::optional<bool> crossMemory;
  // At least `bytes` for peers' data copied here before it is reduced; kept between calls.
  std::byte* staging(size_t bytes) {
    if (staging_.size() < bytes) staging_.resize(bytes);
    return staging_.data();
  }

 private:
  struct Mapped {
    uint64_t id = 0;
    transport::shm::Mapping mapping;
  };
  std::map<std::pair<int, int32_t>, Mapped> mapped_;  // by (peer, its fd)
  std::vector<std::byte> staging_;
};

}  // namespace tutti::runtime
