// kernels/device/ring_allreduce.hpp: the ring all-reduce one thread group runs for one channel,
// the same code on the GPU (a block per channel, ring_kernel.cu) and in the CPU tests (a thread
// per rank per channel). The host's ring (runtime/collectives/allreduce_ring.cpp) has the same
// schedule over its own transports:
//
// The buffer is split between channels (alignedSplit), each channel's part processed in sections
// of n chunks of at most one slot each; in a section, ring position p:
//   step 0        sends chunk p-1 to next;
//   steps 1..n-2  receive chunk p-j from prev, reduce their own part into it, pass it on;
//   step n-1      receives chunk p, reduces its own part: chunk p is final, written to the output
//                 and passed on;
//   steps n..2n-3 receive a final chunk, write it out and pass it on;
//   step 2n-2     receives the last final chunk (p+1).
// Every element is reduced once, by one rank, then copied: all ranks hold identical bits. The
// fold runs around the ring from the chunk's first rank (op(received, own)), so half types round
// once per step, as on the host. avg folds as sum: dividing is the caller's last step, as for the
// host kernels (kernels::avgFinish).
//
// Chunk boundaries fall on 16-byte multiples of the buffer (but the last), so that aligned
// buffers move in whole vectors.
#pragma once

#include <cstddef>

#include "kernels/device/primitives.hpp"

namespace tutti::kernels::device {

struct Range {
  size_t offset;
  size_t count;
};

// Part `part` of [0, total) cut into `parts` pieces of ceil(total / parts) rounded up to a
// multiple of `align`; the last pieces may be shorter or empty. Every element is in one piece,
// in order, and every piece starts at a multiple of `align`.
TUTTI_HOST_DEVICE inline Range alignedSplit(size_t total, size_t parts, size_t part, size_t align) {
  const size_t per = ((total + parts - 1) / parts + align - 1) / align * align;
  const size_t begin = part * per < total ? part * per : total;
  const size_t end = begin + per < total ? begin + per : total;
  return {begin, end - begin};
}

template <typename T>
struct RingArgs {
  const T* src;
  T* dst;  // may be src
  size_t count;
  int nranks;
  int position;  // this rank's place in the ring; prev is position - 1, next position + 1
  int channel;
  int nchannels;
  Fifo fromPrev;  // this channel's FIFO from prev (unused with one rank)
  Fifo toNext;    // this channel's FIFO to next
  AbortSignal signal;
};

template <typename Proto, typename T, typename Op, typename Group>
TUTTI_HOST_DEVICE Status ringAllReduce(const Group& group, const RingArgs<T>& args) {
  constexpr size_t kAlign = 16 % sizeof(T) == 0 ? 16 / sizeof(T) : 1;
  const Range mine =
      alignedSplit(args.count, static_cast<size_t>(args.nchannels), args.channel, kAlign);
  const T* src = args.src + mine.offset;
  T* dst = args.dst + mine.offset;
  if (args.nranks == 1) {
    if (src != dst) groupCopy(group, dst, src, mine.count * sizeof(T));
    return Status::kOk;
  }

  Primitives<Proto, Group> prims(group, args.fromPrev, args.toNext, args.signal);
  const long n = args.nranks, p = args.position;
  // Whole 16-byte units per chunk (an LL slot of 48 bytes carries 24: a chunk takes 16 of them).
  const size_t chunkElems = prims.chunkBytes() / 16 * 16 / sizeof(T);
  const size_t sectionElems = static_cast<size_t>(n) * chunkElems;
  for (size_t base = 0; base < mine.count; base += sectionElems) {
    const size_t inSection = mine.count - base < sectionElems ? mine.count - base : sectionElems;
    auto chunk = [&](long index) {
      const auto part = static_cast<size_t>(((index % n) + n) % n);
      Range c = alignedSplit(inSection, static_cast<size_t>(n), part, kAlign);
      c.offset += base;
      return c;
    };
    Range c = chunk(p - 1);
    prims.send(src + c.offset, c.count);
    for (long j = 2; j < n; ++j) {
      c = chunk(p - j);
      prims.template recvReduceSend<T, Op>(src + c.offset, c.count);
    }
    c = chunk(p);
    prims.template recvReduceCopySend<T, Op>(src + c.offset, dst + c.offset, c.count);
    for (long j = 1; j < n - 1; ++j) {
      c = chunk(p - j);
      prims.recvCopySend(dst + c.offset, c.count);
    }
    c = chunk(p + 1);
    prims.recv(dst + c.offset, c.count);
    if (prims.status() != Status::kOk) break;
  }
  return prims.status();
}

}  // namespace tutti::kernels::device
