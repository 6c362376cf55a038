// A CPU allocator for torch that serves large tensors from tutti's registered memory
// (tutti_mem_alloc), so that tensors torch allocates itself, such as DistributedDataParallel's
// gradient buckets, are all-reduced by the direct algorithm: each process reads the others'
// buckets in place instead of copying them through the shared-memory FIFOs.
//
// Smaller tensors, and any the system refuses (a file descriptor limit, memory), come from the
// allocator that was installed before. Freed blocks are kept for reuse up to a byte limit:
// training allocates the same sizes every step, and a fresh registered block costs a memfd, a
// mapping and its page faults. Registered memory is shared with forked children (as after
// Tensor.share_memory_()), which is why this is opt-in.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tutti_torch {

struct RegisteredAllocatorStats {
  bool enabled = false;
  size_t minBytes = 0, maxCachedBytes = 0;
  size_t liveBytes = 0;    // registered, held by tensors now
  size_t cachedBytes = 0;  // registered, freed by torch and kept for reuse
  uint64_t fallbacks = 0;  // requests of minBytes or more served by the previous allocator
};

// Installs the allocator as torch's CPU allocator (or updates its limits when it already is).
// minBytes 0 is invalid. Throws when another allocator of higher priority holds the place.
void enableRegisteredAllocator(size_t minBytes, size_t maxCachedBytes);
// Restores the previous allocator and frees the cached blocks; tensors already allocated stay
// valid and free their memory when they go.
void disableRegisteredAllocator();
RegisteredAllocatorStats registeredAllocatorStats();

}  // namespace tutti_torch
