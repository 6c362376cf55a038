// kernels/device/primitives.hpp: the fused primitives a ring schedule is written in, over one
// connection pair prev -> me -> next, for one thread group (one channel). Each call moves one
// chunk of at most one slot (the schedule cuts chunks so): it receives it from prev, and/or
// reduces it with a local buffer, and/or copies it to a local buffer, and/or sends it to next,
// in one pass over the data, so a chunk is read once and written once wherever it goes.
//
//   send                 src          -> next
//   recv                 prev         -> dst
//   recvReduceSend       prev op src  -> next
//   recvReduceCopySend   prev op src  -> dst, next
//   recvCopySend         prev         -> dst, next
//   groupCopy            src          -> dst        (any size, no connection: one rank)
//
// The protocol (Simple, LL) is a template parameter, so a schedule is written once for both.
// Errors are sticky: once a wait fails (abort, spin budget), every later call returns at once
// with the same status, so a schedule runs its calls and reads status() at the end.
#pragma once

#include <cstddef>

#include "kernels/device/fifo.hpp"
#include "kernels/device/pack.hpp"

namespace tutti::kernels::device {

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

template <typename Proto, typename Group>
class Primitives {
 public:
  // fromPrev: the FIFO prev sends into; toNext: the FIFO this rank sends into.
  TUTTI_HOST_DEVICE Primitives(const Group& group, const Fifo& fromPrev, const Fifo& toNext,
                               const AbortSignal& signal)
      : group_(group),
        in_(fromPrev),
        out_(toNext),
        signal_(signal),
        recvStep_(receivedSoFar(fromPrev)),
        sendStep_(sentSoFar(toNext)) {}

  // The most bytes one call may move: one slot of either FIFO.
  TUTTI_HOST_DEVICE size_t chunkBytes() const {
    const size_t a = Proto::capacity(in_), b = Proto::capacity(out_);
    return a < b ? a : b;
  }

  TUTTI_HOST_DEVICE Status status() const { return status_; }

  template <typename T>
  TUTTI_HOST_DEVICE void send(const T* src, size_t n) {
    move<T, OpSum, kSend>(src, nullptr, n);
  }
  template <typename T>
  TUTTI_HOST_DEVICE void recv(T* dst, size_t n) {
    move<T, OpSum, kRecv | kCopy>(nullptr, dst, n);
  }
  template <typename T, typename Op>
  TUTTI_HOST_DEVICE void recvReduceSend(const T* src, size_t n) {
    move<T, Op, kRecv | kReduce | kSend>(src, nullptr, n);
  }
  template <typename T, typename Op>
  TUTTI_HOST_DEVICE void recvReduceCopySend(const T* src, T* dst, size_t n) {
    move<T, Op, kRecv | kReduce | kCopy | kSend>(src, dst, n);
  }
  template <typename T>
  TUTTI_HOST_DEVICE void recvCopySend(T* dst, size_t n) {
    move<T, OpSum, kRecv | kCopy | kSend>(nullptr, dst, n);
  }

 private:
  enum : unsigned { kRecv = 1, kReduce = 2, kCopy = 4, kSend = 8 };
  using Unit = typename Proto::Unit;
  static constexpr size_t kUnit = Proto::kUnitBytes;

  // One chunk of n elements (n * sizeof(T) <= chunkBytes()). Thread 0 waits for the incoming
  // slot and the outgoing free slot, the group moves the units, thread 0 frees the incoming slot
  // and publishes the outgoing one; agree() is the barrier between those phases.
  template <typename T, typename Op, unsigned kFlags>
  TUTTI_HOST_DEVICE void move(const T* src, T* dst, size_t n) {
    if (status_ != Status::kOk || n == 0) return;
    const size_t bytes = n * sizeof(T);
    const auto* srcBytes = reinterpret_cast<const unsigned char*>(src);
    auto* dstBytes = reinterpret_cast<unsigned char*>(dst);
    Status status = Status::kOk;
    if (group_.index() == 0) {
      if constexpr ((kFlags & kRecv) != 0) status = Proto::waitData(in_, recvStep_, signal_);
      if constexpr ((kFlags & kSend) != 0) {
        if (status == Status::kOk) status = waitFree(out_, sendStep_, signal_);
      }
    }
    if ((status_ = group_.agree(status)) != Status::kOk) return;

    const size_t units = (bytes + kUnit - 1) / kUnit;
    for (size_t k = static_cast<size_t>(group_.index()); k < units;
         k += static_cast<size_t>(group_.size())) {
      const size_t offset = k * kUnit;
      const size_t partBytes = bytes - offset < kUnit ? bytes - offset : kUnit;
      Unit v;
      if constexpr ((kFlags & kRecv) != 0) {
        status = Proto::load(in_, recvStep_, k, v, signal_);
        if (status != Status::kOk) break;
      } else {
        v = loadPack<kUnit>(srcBytes + offset, partBytes);
      }
      if constexpr ((kFlags & kReduce) != 0) {
        v = reducePack<T, Op>(v, loadPack<kUnit>(srcBytes + offset, partBytes));
      }
      if constexpr ((kFlags & kCopy) != 0) storePack(dstBytes + offset, v, partBytes);
      if constexpr ((kFlags & kSend) != 0) Proto::store(out_, sendStep_, k, v);
    }
    if ((status_ = group_.agree(status)) != Status::kOk) return;

    if (group_.index() == 0) {
      if constexpr ((kFlags & kRecv) != 0) freeSlot(in_, recvStep_);
      if constexpr ((kFlags & kSend) != 0) Proto::publish(out_, sendStep_);
    }
    if constexpr ((kFlags & kRecv) != 0) ++recvStep_;
    if constexpr ((kFlags & kSend) != 0) ++sendStep_;
  }

  Group group_;
  Fifo in_;
  Fifo out_;
  AbortSignal signal_;
  uint64_t recvStep_;
  uint64_t sendStep_;
  Status status_ = Status::kOk;
};

}  // namespace tutti::kernels::device
