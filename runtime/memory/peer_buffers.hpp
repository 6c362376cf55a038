// The registered memory of a communicator's peers on this host, mapped into this process on first
// use and kept for the communicator's life (a bucket is all-reduced every iteration). One mapping
// per peer file descriptor: a peer that frees an allocation and gets the same descriptor number
// for a new one replaces the old mapping rather than adding to it.
#pragma once

#include <map>
#include <utility>

#include "runtime/memory/registered_memory.hpp"
#include "transport/shm/segment.hpp"

namespace tutti::runtime {

class PeerBuffers {
 public:
  // The peer's range [range.offset, range.offset + bytes) in this process, or nullptr when it
  // cannot be mapped here (no access to the peer's /proc entry, another pid namespace, a file
  // that is not the one described): the caller then copies through the FIFOs instead.
  std::byte* map(int peer, long pid, const RegisteredRange& range, size_t bytes);

 private:
  struct Mapped {
    uint64_t id = 0;
    transport::shm::Mapping mapping;
  };
  std::map<std::pair<int, int32_t>, Mapped> mapped_;  // by (peer, its fd)
};

}  // namespace tutti::runtime
