// Pages made ready before data flows. A FIFO's slots are first written when a message first
// needs them: a size sweep that moves up from 4K to 32K, or a job whose gradients grow, then
// pays for each 4 KiB page on first touch, in the middle of a collective, and with 4 ranks on 2
// cores every rank waits for it. On the 2-core VM of 2026-12-03 (a guest whose page tables the
// host shadows) that was 1-5 ms of stalls a few operations into each new size, and the kernel's
// MADV_POPULATE_WRITE did not remove them: the guest's page table was filled, the host's not.
// Touching each page does both, on any machine (docs/design.md, "Prefaulted slots").
#pragma once

#include <cstddef>

namespace tutti {

// Writes every page of [address, address + bytes) that holds an aligned 32-bit word of it (all
// of them for page-aligned ranges) without changing what it holds: an atomic OR of zero into one
// such word per page, so a peer that writes the same memory meanwhile loses nothing. Memory with
// no backing yet gets it: callers touch only what they will use.
void prefault(void* address, size_t bytes);

}  // namespace tutti
