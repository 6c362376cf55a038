// kernels/device/primitives.hpp: the fused primitives a schedule is written in, for one thread
// group (one channel), over the FIFOs it receives from and sends to: one of each on a ring
// (prev -> me -> next), up to kMaxPeers of either in a tree (a node's children). Each call moves
// one chunk of at most one slot (the schedule cuts chunks so): it receives it, and/or reduces it
// with a local buffer, and/or copies it to a local buffer, and/or sends it on, in one pass over
// the data, so a chunk is read once and written once wherever it goes.
//
//   send                 src                 -> every next
//   copySend             src                 -> dst, every next
//   recv                 prev                -> dst
//   recvCopySend         prev                -> dst, every next
//   recvReduceSend       prevs op ... op src -> every next
//   recvReduceCopy       prevs op ... op src -> dst
//   recvReduceCopySend   prevs op ... op src -> dst, every next
//   groupCopy            src                 -> dst        (any size, no connection: one rank)
//
// Only the reducing primitives receive from several FIFOs (they fold them in order, then src);
// the others receive from the first. The protocol (Simple, LL) is a template parameter, so a
// schedule is written once for both. Errors are sticky: once a wait fails (abort, spin budget),
// every later call returns at once with the same status, so a schedule runs its calls and reads
// status() at the end.
#pragma once

#include <cstddef>

#include "kernels/device/chunks.hpp"
#include "kernels/device/fifo.hpp"
#include "kernels/device/pack.hpp"

// On the GPU, move() is called, not inlined: one copy per kernel instead of one per call site of
// the schedule keeps nvcc's time and the code size down (docs/gpu.md has the figures). Loops over a
// thread's units in flight are unrolled, so that their arrays live in registers.
#if defined(__CUDACC__)
#define TUTTI_NOINLINE __noinline__
#define TUTTI_UNROLL _Pragma("unroll")
#else
#define TUTTI_NOINLINE
#define TUTTI_UNROLL
#endif

namespace tutti::kernels::device {

// The most FIFOs a group receives from or sends to at once: a binary tree node's children.
inline constexpr int kMaxPeers = 2;

// Copies `bytes` bytes, the group's threads striding over 16-byte units.
template <typename Group>
TUTTI_HOST_DEVICE void groupCopy(const Group& group, void* dst, const void* src, size_t bytes) {
  constexpr size_t kUnit = 16;
  const size_t units = (bytes + kUnit - 1) / kUnit;
  for (size_t k = static_cast<size_t>(group.index()); k < units;
       k += static_cast<size_t>(group.size())) {
    const size_t offset = k * kUnit;
    const size_t n = bytes - offset < kUnit ? bytes - offset : kUnit;
    storePack(static_cast<unsigned char*>(dst) + offset,
              loadPack<kUnit>(static_cast<const unsigned char*>(src) + offset, n), n);
  }
}

// One class per protocol, element type and op (non-reducing schedules take any op, OpSum), so
// that a kernel holds one copy of the chunk mover, move(), whatever its schedule calls.
template <typename Proto, typename T, typename Op, typename Group>
class Primitives {
 public:
  // Receives from recvFrom[0, nrecv) and sends into sendTo[0, nsend), each at most kMaxPeers.
  TUTTI_HOST_DEVICE Primitives(const Group& group, const Fifo* recvFrom, int nrecv,
                               const Fifo* sendTo, int nsend, const AbortSignal& signal)
      : group_(group), nin_(nrecv), nout_(nsend), signal_(signal) {
    for (int i = 0; i < nin_; ++i) {
      in_[i] = recvFrom[i];
      recvStep_[i] = receivedSoFar(in_[i]);
    }
    for (int i = 0; i < nout_; ++i) {
      out_[i] = sendTo[i];
      sendStep_[i] = sentSoFar(out_[i]);
    }
  }
  // A ring's: fromPrev is the FIFO prev sends into, toNext the one this rank sends into.
  TUTTI_HOST_DEVICE Primitives(const Group& group, const Fifo& fromPrev, const Fifo& toNext,
                               const AbortSignal& signal)
      : Primitives(group, &fromPrev, 1, &toNext, 1, signal) {}

  // The most bytes one call may move: one slot of every FIFO.
  TUTTI_HOST_DEVICE size_t chunkBytes() const {
    size_t bytes = ~size_t{0};
    for (int i = 0; i < nin_; ++i) bytes = smallerOf(bytes, Proto::capacity(in_[i]));
    for (int i = 0; i < nout_; ++i) bytes = smallerOf(bytes, Proto::capacity(out_[i]));
    return bytes;
  }

  TUTTI_HOST_DEVICE Status status() const { return status_; }

  TUTTI_HOST_DEVICE void send(const T* src, size_t n) { move(kSend, src, nullptr, n); }
  TUTTI_HOST_DEVICE void copySend(const T* src, T* dst, size_t n) {
    move(kCopy | kSend, src, dst, n);
  }
  TUTTI_HOST_DEVICE void recv(T* dst, size_t n) { move(kRecv | kCopy, nullptr, dst, n); }
  TUTTI_HOST_DEVICE void recvCopySend(T* dst, size_t n) {
    move(kRecv | kCopy | kSend, nullptr, dst, n);
  }
  TUTTI_HOST_DEVICE void recvReduceSend(const T* src, size_t n) {
    move(kRecv | kReduce | kSend, src, nullptr, n);
  }
  TUTTI_HOST_DEVICE void recvReduceCopy(const T* src, T* dst, size_t n) {
    move(kRecv | kReduce | kCopy, src, dst, n);
  }
  TUTTI_HOST_DEVICE void recvReduceCopySend(const T* src, T* dst, size_t n) {
    move(kRecv | kReduce | kCopy | kSend, src, dst, n);
  }

 private:
  enum : unsigned { kRecv = 1, kReduce = 2, kCopy = 4, kSend = 8 };
  using Unit = typename Proto::Unit;
  using Line = typename Proto::Line;
  using Slot = typename Proto::Slot;
  static constexpr size_t kUnit = Proto::kUnitBytes;
  // Units each thread has in flight at once. One at a time, a block of 256 threads moved
  // 2.7 GB/s on an H200: one memory round trip per 4 KiB.
  static constexpr int kUnroll = 4;

  // One chunk of n elements (n * sizeof(T) <= chunkBytes()). Thread 0 waits for the incoming
  // slots and the outgoing free slots, the group moves the units, thread 0 frees the incoming
  // slots and publishes the outgoing ones; agree() is the barrier between those phases.
  TUTTI_NOINLINE TUTTI_HOST_DEVICE void move(unsigned flags, const T* src, T* dst, size_t n) {
    if (status_ != Status::kOk || n == 0) return;
    const bool recvs = (flags & kRecv) != 0, reduces = (flags & kReduce) != 0;
    const bool copies = (flags & kCopy) != 0, sends = (flags & kSend) != 0;
    // Several incoming FIFOs are folded together: only a reducing primitive reads past the first.
    const int nin = reduces ? nin_ : 1;
    const size_t bytes = n * sizeof(T);
    const auto* srcBytes = reinterpret_cast<const unsigned char*>(src);
    auto* dstBytes = reinterpret_cast<unsigned char*>(dst);
    Status status = Status::kOk;
    if (group_.index() == 0) {
      if (recvs) {
        for (int i = 0; i < nin && status == Status::kOk; ++i) {
          status = Proto::waitData(in_[i], recvStep_[i], signal_);
        }
      }
      if (sends) {
        for (int i = 0; i < nout_ && status == Status::kOk; ++i) {
          status = waitFree(out_[i], sendStep_[i], signal_);
        }
      }
    }
    if ((status_ = group_.agree(status)) != Status::kOk) return;

    // What the units' passes need, in locals: the group's stores into user memory could alias
    // the members as far as the compiler knows, which made it reload them (and redo a 64-bit %
    // per FIFO) for every unit.
    Pass pass{recvs, reduces, copies,   recvs ? nin : 0, sends ? nout_ : 0,
              {},    {},      srcBytes, dstBytes,        bytes};
    for (int i = 0; i < pass.nin; ++i) pass.in[i] = Proto::slot(in_[i], recvStep_[i]);
    for (int i = 0; i < pass.nout; ++i) pass.out[i] = Proto::slot(out_[i], sendStep_[i]);
    // Whole batches of whole units go kUnroll at a time in vector accesses; what is left (a
    // partial unit, a buffer not aligned to a unit, the last few units) one at a time.
    const auto stride = static_cast<size_t>(group_.size());
    const bool aligned = reinterpret_cast<uintptr_t>(srcBytes) % kUnit == 0 &&
                         reinterpret_cast<uintptr_t>(dstBytes) % kUnit == 0;
    const size_t batch = stride * kUnroll;
    const size_t batched = aligned ? bytes / kUnit / batch * batch : 0;
    status = moveUnits<kUnroll, true>(pass, 0, batched);
    if (status == Status::kOk)
      status = moveUnits<1, false>(pass, batched, (bytes + kUnit - 1) / kUnit);
    if ((status_ = group_.agree(status)) != Status::kOk) return;

    if (recvs) {
      for (int i = 0; i < nin; ++i) {
        if (group_.index() == 0) freeSlot(in_[i], recvStep_[i]);
        ++recvStep_[i];
      }
    }
    if (sends) {
      for (int i = 0; i < nout_; ++i) {
        if (group_.index() == 0) Proto::publish(out_[i], sendStep_[i]);
        ++sendStep_[i];
      }
    }
  }

  // One chunk's move, as its passes over the units see it.
  struct Pass {
    bool recvs, reduces, copies;
    int nin, nout;  // slots read (0 unless it receives), slots written (0 unless it sends)
    Slot in[kMaxPeers], out[kMaxPeers];
    const unsigned char* src;
    unsigned char* dst;
    size_t bytes;
  };

  // Units [begin, end) of the chunk, each thread kUnits of them in flight at once: first,
  // first + stride, ... (neighbouring threads on neighbouring units, so that each access of the
  // group is contiguous). Whole: every unit is whole and the buffers are aligned to units, so
  // each access is one vector access (one batch at a time: end - begin is a multiple of
  // kUnits * stride).
  template <int kUnits, bool kWhole>
  TUTTI_HOST_DEVICE Status moveUnits(const Pass& pass, size_t begin, size_t end) const {
    const auto stride = static_cast<size_t>(group_.size());
    for (size_t first = begin + static_cast<size_t>(group_.index()); first < end;
         first += stride * kUnits) {
      const auto unitAt = [&](int j) { return first + static_cast<size_t>(j) * stride; };
      const auto has = [&](int j) { return kWhole || unitAt(j) < end; };
      const auto partBytes = [&](int j) {
        const size_t offset = unitAt(j) * kUnit;
        return kWhole || pass.bytes - offset >= kUnit ? kUnit : pass.bytes - offset;
      };
      Unit v[kUnits] = {};
      if (pass.recvs) {
        Status status = receive<kUnits>(pass.in[0], first, stride, end, v);
        for (int i = 1; i < pass.nin && status == Status::kOk; ++i) {
          Unit w[kUnits] = {};
          status = receive<kUnits>(pass.in[i], first, stride, end, w);
          TUTTI_UNROLL
          for (int j = 0; j < kUnits; ++j) v[j] = reducePack<T, Op>(v[j], w[j]);
        }
        if (status != Status::kOk) return status;
      }
      if (!pass.recvs || pass.reduces) {
        Unit own[kUnits] = {};
        TUTTI_UNROLL
        for (int j = 0; j < kUnits; ++j) {
          const unsigned char* at = pass.src + unitAt(j) * kUnit;
          if (has(j)) own[j] = kWhole ? loadAligned<kUnit>(at) : loadPack<kUnit>(at, partBytes(j));
        }
        TUTTI_UNROLL
        for (int j = 0; j < kUnits; ++j) {
          v[j] = pass.recvs ? reducePack<T, Op>(v[j], own[j]) : own[j];
        }
      }
      TUTTI_UNROLL
      for (int j = 0; j < kUnits; ++j) {
        if (!has(j)) break;
        if (pass.copies) {  // dst is null otherwise
          unsigned char* at = pass.dst + unitAt(j) * kUnit;
          if (kWhole) {
            storeAligned(at, v[j]);
          } else {
            storePack(at, v[j], partBytes(j));
          }
        }
        for (int i = 0; i < pass.nout; ++i) Proto::store(pass.out[i], unitAt(j), v[j]);
      }
    }
    return Status::kOk;
  }

  // Units first, first + stride, ... (kUnits of them, those below `end`) of a slot into v:
  // every read is issued before any is checked, so that their round trips overlap; a line that
  // has not arrived yet (LL) is read again until it has.
  template <int kUnits>
  TUTTI_HOST_DEVICE Status receive(const Slot& slot, size_t first, size_t stride, size_t end,
                                   Unit (&v)[kUnits]) const {
    Line lines[kUnits] = {};
    TUTTI_UNROLL
    for (int j = 0; j < kUnits; ++j) {
      const size_t k = first + static_cast<size_t>(j) * stride;
      if (k < end) lines[j] = Proto::read(slot, k);
    }
    TUTTI_UNROLL
    for (int j = 0; j < kUnits; ++j) {
      const size_t k = first + static_cast<size_t>(j) * stride;
      if (k >= end) break;
      if (!Proto::arrived(slot, lines[j])) {
        const Status status = spinUntil(signal_, [&] {
          lines[j] = Proto::read(slot, k);
          return Proto::arrived(slot, lines[j]);
        });
        if (status != Status::kOk) return status;
      }
      v[j] = Proto::unitOf(lines[j]);
    }
    return Status::kOk;
  }

  Group group_;
  Fifo in_[kMaxPeers] = {};
  Fifo out_[kMaxPeers] = {};
  int nin_;
  int nout_;
  AbortSignal signal_;
  uint64_t recvStep_[kMaxPeers] = {};
  uint64_t sendStep_[kMaxPeers] = {};
  Status status_ = Status::kOk;
};

}  // namespace tutti::kernels::device
