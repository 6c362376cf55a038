// kernels/device/simple.hpp: the Simple protocol (NCCL's name), for bandwidth. A slot holds
// slotBytes of plain data, moved in 16-byte vectors. The sender waits for a free slot (tail),
// writes the data, then publishes head with a release store; the receiver acquires head, reads
// the slot, and frees it with a release store of tail.
//
// Ordering: the data stores happen before the head release (on the GPU: every thread's stores,
// then the block's barrier, then thread 0's release at system scope; the barrier makes them
// visible to thread 0 and the release is cumulative over what thread 0 has observed, so one
// store covers the whole block's data, as NCCL's barrier + fence + flag does). The receiver's
// acquire of head happens before its barrier and every thread's data loads. The reads of a slot
// happen before the tail release, and the sender acquires tail before it overwrites the slot.
// Two synchronisations per slot: Simple pays them once per slotBytes, so it wants large slots.
#pragma once

#include "kernels/device/fifo.hpp"
#include "kernels/device/pack.hpp"

namespace tutti::kernels::device {

struct Simple {
  static constexpr size_t kUnitBytes = 16;
  using Unit = Pack<kUnitBytes>;

  // Data bytes one slot carries.
  TUTTI_HOST_DEVICE static size_t capacity(const Fifo& fifo) { return fifo.slotBytes; }

  // The receiver (one thread of the group): waits until slot `step` is published.
  TUTTI_HOST_DEVICE static Status waitData(const Fifo& fifo, uint64_t step,
                                           const AbortSignal& signal) {
    return spinUntil(signal, [&] {
      return SystemCounter(*fifo.head).load(::cuda::std::memory_order_acquire) > step;
    });
  }

  // Where slot `step` lies, worked out once per chunk rather than once per unit.
  using Slot = unsigned char*;
  TUTTI_HOST_DEVICE static Slot slot(const Fifo& fifo, uint64_t step) { return slotOf(fifo, step); }

  // What one read of unit k brings: the unit itself. A partial unit is read whole: the slot is
  // 16-byte aligned and the bytes past the data are never used.
  using Line = Unit;
  TUTTI_HOST_DEVICE static Line read(Slot slot, size_t k) {
    return loadAligned<kUnitBytes>(slot + k * kUnitBytes);
  }
  // The slot is published (waitData) before any of it is read: every read is the data.
  TUTTI_HOST_DEVICE static constexpr bool arrived(Slot, const Line&) { return true; }
  TUTTI_HOST_DEVICE static Unit unitOf(const Line& line) { return line; }

  TUTTI_HOST_DEVICE static void store(Slot slot, size_t k, const Unit& v) {
    storeAligned(slot + k * kUnitBytes, v);
  }

  // The sender (one thread, after the group's barrier): slot `step` is complete.
  TUTTI_HOST_DEVICE static void publish(const Fifo& fifo, uint64_t step) {
    SystemCounter(*fifo.head).store(step + 1, ::cuda::std::memory_order_release);
  }
};

}  // namespace tutti::kernels::device
