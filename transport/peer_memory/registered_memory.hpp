// Registered memory (tutti_mem_alloc; transport/peer_memory.hpp declares allocateRegistered and
// freeRegistered): host memory that the other ranks on the host can map, so that a collective on
// it reads the peers' buffers in place instead of copying through the shm FIFOs (NCCL's
// ncclMemAlloc plus buffer registration, for CPU memory).
//
// Each allocation is its own memfd, mapped shared. A peer opens it through /proc/<pid>/fd/<fd>,
// which the kernel allows only to processes of the same user (the ptrace access check), and
// checks the file's identity (device and inode) before mapping it. No name exists anywhere: the
// memory goes away with the last process that maps it, crashed or not.
#pragma once

#include <cstddef>
#include <optional>

#include "transport/peer_memory.hpp"

namespace tutti::transport {

// The allocation that holds all of [data, data + bytes), if one does.
std::optional<RegisteredRange> findRegistered(const void* data, size_t bytes);

}  // namespace tutti::transport
