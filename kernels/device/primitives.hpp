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
// the schedule keeps nvcc's time and the code size down (docs/gpu.md has the figures).
#if defined(__CUDACC__)
#define TUTTI_NOINLINE __noinline__
#else
#define TUTTI_NOINLINE
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
  static constexpr size_t kUnit = Proto::kUnitBytes;

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

    const size_t units = (bytes + kUnit - 1) / kUnit;
    for (size_t k = static_cast<size_t>(group_.index()); k < units;
         k += static_cast<size_t>(group_.size())) {
      const size_t offset = k * kUnit;
      const size_t partBytes = bytes - offset < kUnit ? bytes - offset : kUnit;
      Unit v;
      if (recvs) {
        status = Proto::load(in_[0], recvStep_[0], k, v, signal_);
        if (reduces) {
          for (int i = 1; i < nin && status == Status::kOk; ++i) {
            Unit w;
            status = Proto::load(in_[i], recvStep_[i], k, w, signal_);
            v = reducePack<T, Op>(v, w);
          }
        }
        if (status != Status::kOk) break;
      } else {
        v = loadPack<kUnit>(srcBytes + offset, partBytes);
      }
      if (reduces) {
        v = reducePack<T, Op>(v, loadPack<kUnit>(srcBytes + offset, partBytes));
      }
      if (copies) storePack(dstBytes + offset, v, partBytes);
      if (sends) {
        for (int i = 0; i < nout_; ++i) Proto::store(out_[i], sendStep_[i], k, v);
      }
    }
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
