// kernels/device/ll.hpp: the LL ("low latency") protocol (NCCL's idea), for small messages. A
// slot is an array of 16-byte lines; each line carries 8 bytes of data as two 4-byte words, each
// paired with a 4-byte flag: {data0, flag, data1, flag}. The flag is the slot's sequence number
// plus one (never 0, so zeroed memory never looks written). The receiver spins on the line
// itself until both flags equal the step it expects, then the data beside them is the data of
// that step: there is no head to publish, no fence and no barrier between sender and receiver,
// one memory round trip instead of Simple's three. The price: half of every line is flags.
//
// Why that is enough: each {data, flag} pair is one aligned 8-byte access, which is single-copy
// atomic, so a reader that sees the new flag sees the new data written with it; the two pairs of
// a line are checked separately. On the GPU a line is written and read with one 16-byte vector
// access of two 64-bit elements (st/ld.volatile.v2.u64): PTX models a vector access as one access
// per element, each 8-byte element atomic, which is exactly the guarantee above (NCCL's LL leans
// on the same per-8-byte atomicity). On the CPU a portable atomic 16-byte store does not exist,
// so the line is two 8-byte cuda::atomic_ref stores (relaxed: nothing else is ordered by them).
//
// Flow control is Simple's: the sender still waits for a free slot (tail), and the receiver frees
// the slot once read. head is kept too, relaxed, only as the count the next operation resumes
// from (no one waits on it). Flags are 32 bits and repeat every 2^32 slots; what a line can hold
// instead of the expected flag is the flag of its previous use, nslots steps earlier, and
// 0 < nslots < 2^32 keeps the two apart.
#pragma once

#include "kernels/device/fifo.hpp"
#include "kernels/device/pack.hpp"

namespace tutti::kernels::device {

struct LL {
  static constexpr size_t kUnitBytes = 8;
  static constexpr size_t kLineBytes = 16;
  using Unit = Pack<kUnitBytes>;

  TUTTI_HOST_DEVICE static size_t capacity(const Fifo& fifo) { return fifo.slotBytes / 2; }

  // The flags are in the data: nothing to wait for per slot.
  TUTTI_HOST_DEVICE static Status waitData(const Fifo&, uint64_t, const AbortSignal&) {
    return Status::kOk;
  }

  // Where slot `step` lies and the flag its lines carry, worked out once per chunk.
  struct Slot {
    unsigned char* lines;
    uint32_t flag;
  };
  TUTTI_HOST_DEVICE static Slot slot(const Fifo& fifo, uint64_t step) {
    return {slotOf(fifo, step), static_cast<uint32_t>(step + 1)};
  }

  // What one read of line k brings: its two halves, {data, flag} each. The reader checks the
  // flags (arrived) and reads again until they are the step's; reads of several lines are issued
  // before any is checked, so that their memory round trips overlap.
  struct Line {
    uint64_t lo, hi;
  };
  TUTTI_HOST_DEVICE static Line read(const Slot& slot, size_t k) {
    Line line;
    readLine(lineOf(slot, k), line.lo, line.hi);
    return line;
  }
  TUTTI_HOST_DEVICE static bool arrived(const Slot& slot, const Line& line) {
    return static_cast<uint32_t>(line.lo >> 32) == slot.flag &&
           static_cast<uint32_t>(line.hi >> 32) == slot.flag;
  }
  TUTTI_HOST_DEVICE static Unit unitOf(const Line& line) {
    const uint32_t words[2] = {static_cast<uint32_t>(line.lo), static_cast<uint32_t>(line.hi)};
    Unit out;
    memcpy(out.bytes, words, sizeof words);
    return out;
  }

  TUTTI_HOST_DEVICE static void store(const Slot& slot, size_t k, const Unit& v) {
    uint32_t words[2];
    memcpy(words, v.bytes, sizeof words);
    const uint64_t flag = static_cast<uint64_t>(slot.flag) << 32;
    writeLine(lineOf(slot, k), words[0] | flag, words[1] | flag);
  }

  TUTTI_HOST_DEVICE static void publish(const Fifo& fifo, uint64_t step) {
    SystemCounter(*fifo.head).store(step + 1, ::cuda::std::memory_order_relaxed);
  }

 private:
  TUTTI_HOST_DEVICE static uint64_t* lineOf(const Slot& slot, size_t k) {
    return reinterpret_cast<uint64_t*>(slot.lines + k * kLineBytes);
  }

  // A line as two 64-bit halves, each {data (low word), flag (high word)}: the memory order
  // data0, flag, data1, flag on a little-endian machine, as on the GPU.
  TUTTI_HOST_DEVICE static void readLine(uint64_t* line, uint64_t& lo, uint64_t& hi) {
#if defined(__CUDA_ARCH__)
    asm volatile("ld.volatile.v2.u64 {%0, %1}, [%2];" : "=l"(lo), "=l"(hi) : "l"(line) : "memory");
#else
    lo = SystemCounter(line[0]).load(::cuda::std::memory_order_relaxed);
    hi = SystemCounter(line[1]).load(::cuda::std::memory_order_relaxed);
#endif
  }

  TUTTI_HOST_DEVICE static void writeLine(uint64_t* line, uint64_t lo, uint64_t hi) {
#if defined(__CUDA_ARCH__)
    asm volatile("st.volatile.v2.u64 [%0], {%1, %2};" ::"l"(line), "l"(lo), "l"(hi) : "memory");
#else
    SystemCounter(line[0]).store(lo, ::cuda::std::memory_order_relaxed);
    SystemCounter(line[1]).store(hi, ::cuda::std::memory_order_relaxed);
#endif
  }
};

}  // namespace tutti::kernels::device
