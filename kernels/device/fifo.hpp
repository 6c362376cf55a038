// kernels/device/fifo.hpp: one direction of a connection, a FIFO of slots in memory both ends
// map (the receiver's GPU memory over NVLink/PCIe, or pinned host memory; plain host memory when
// CPU threads stand in for the GPU).
//
// Two counters drive it, each written by one side only: head counts the slots the sender has
// published, tail the slots the receiver has freed. Slot s (s counted from the connection's
// first use) lives at index s % nslots; the sender may fill it once tail + nslots > s. Both
// counters persist across operations, so the next operation starts where the last one ended:
// each side reads its own counter back (relaxed: it is the only writer).
//
// The counters are cuda::atomic_ref<uint64_t, thread_scope_system>: the release store of one
// side and the acquire load of the other order the slot's data between two devices (or a device
// and the host), which is what thread_scope_system means. What the slots hold, and whether head
// carries the data's ordering, is the protocol's business (simple.hpp, ll.hpp).
#pragma once

#include <cstdint>
#include <cuda/atomic>

#include "kernels/device/wait.hpp"

namespace tutti::kernels::device {

struct Fifo {
  uint64_t* head;        // slots published; the sender writes it
  uint64_t* tail;        // slots freed; the receiver writes it
  unsigned char* slots;  // nslots * slotBytes bytes, 16-byte aligned
  uint32_t nslots;
  uint32_t slotBytes;  // a multiple of 16, at least 32 (an LL slot carries half of it)
};

// ::cuda, not cuda: tutti::kernels::cuda (the kernels' CUDA side) would shadow it.
using SystemCounter = ::cuda::atomic_ref<uint64_t, ::cuda::thread_scope_system>;

TUTTI_HOST_DEVICE inline unsigned char* slotOf(const Fifo& fifo, uint64_t step) {
  return fifo.slots + (step % fifo.nslots) * fifo.slotBytes;
}

// The sender: waits until slot `step` is free (the receiver has freed slot step - nslots).
TUTTI_HOST_DEVICE inline Status waitFree(const Fifo& fifo, uint64_t step,
                                         const AbortSignal& signal) {
  return spinUntil(signal, [&] {
    return SystemCounter(*fifo.tail).load(::cuda::std::memory_order_acquire) + fifo.nslots > step;
  });
}

// The receiver: slot `step` is consumed; its reads happen before the sender's next writes to it.
TUTTI_HOST_DEVICE inline void freeSlot(const Fifo& fifo, uint64_t step) {
  SystemCounter(*fifo.tail).store(step + 1, ::cuda::std::memory_order_release);
}

// Where each side resumes: the slots it has published (sender) or freed (receiver) so far.
TUTTI_HOST_DEVICE inline uint64_t sentSoFar(const Fifo& fifo) {
  return SystemCounter(*fifo.head).load(::cuda::std::memory_order_relaxed);
}
TUTTI_HOST_DEVICE inline uint64_t receivedSoFar(const Fifo& fifo) {
  return SystemCounter(*fifo.tail).load(::cuda::std::memory_order_relaxed);
}

}  // namespace tutti::kernels::device
