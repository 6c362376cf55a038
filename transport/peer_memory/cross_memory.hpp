// Ordinary memory of another process on this host, copied through the kernel (process_vm_readv,
// "cross memory attach"): one copy per byte and no shared mapping, the single-copy mechanism
// Open MPI's shared-memory transport uses. Only ever read: a rank that wrote into a peer's
// memory could not know that the peer had not given up on the operation and reused it. The kernel
// allows it to processes that could ptrace the peer (the same user, or CAP_SYS_PTRACE; Yama and
// seccomp may refuse it), so the direct algorithms ask once per communicator whether it works.
#pragma once

#include <cstddef>
#include <cstdint>

#include "transport/peer_memory.hpp"

namespace tutti::transport {

// This process's identity (ProcessIdentity): its bytes are a static's own.
const ProcessIdentity& thisProcess();

// Whether `pid` is the process that `identity` describes, read through the kernel: false when the
// kernel refuses (logged at INFO with the reason) or the bytes differ.
bool crossMemoryReaches(long pid, const ProcessIdentity& identity);

// Copies `bytes` from `from` in process `pid` to `to` here. 0 on success, else the errno of the
// call that failed (EFAULT for a range the peer does not have mapped; ESRCH when it is gone).
int readCrossMemory(long pid, void* to, uint64_t from, size_t bytes);

}  // namespace tutti::transport
