// Registered memory (tutti_mem_alloc): host memory that the other ranks on the host can map, so
// that a collective on it reads the peers' buffers in place instead of copying through the shm
// FIFOs (NCCL's ncclMemAlloc plus buffer registration, for CPU memory).
//
// Each allocation is its own memfd, mapped shared. A peer opens it through /proc/<pid>/fd/<fd>,
// which the kernel allows only to processes of the same user (the ptrace access check), and
// checks the file's identity (device and inode) before mapping it. No name exists anywhere: the
// memory goes away with the last process that maps it, crashed or not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace tutti::runtime {

// Where a registered range lives, in the terms a peer needs to map it.
struct RegisteredRange {
  uint64_t id = 0;  // the allocation's, random: a cache key that no later allocation reuses
  uint64_t device = 0, inode = 0;  // the memfd's identity, checked by whoever opens it
  int32_t fd = -1;                 // in the owning process
  uint64_t allocationBytes = 0;
  uint64_t offset = 0;  // of the range within the allocation
};

// Page-aligned, zero-filled, backed by memory now (a shortage is an Error here, not a SIGBUS at
// the first write). Throws kInvalidArgument for 0 bytes, kSystem when the memory is not there.
void* allocateRegistered(size_t bytes);
// `data` must be what allocateRegistered returned (else kInvalidArgument naming it); nullptr is
// ignored. Peers that mapped it keep their mapping until they drop it.
void freeRegistered(void* data);
// The allocation that holds all of [data, data + bytes), if one does.
std::optional<RegisteredRange> findRegistered(const void* data, size_t bytes);

}  // namespace tutti::runtime
