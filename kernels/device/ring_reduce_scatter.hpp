// kernels/device/ring_reduce_scatter.hpp: the ring reduce-scatter one thread group runs for one
// channel (NCCL's schedule). src holds nranks blocks of `count` elements, block b for rank b (the
// rank at some ring position, RingArgs::ranks); the output is the reduction of every rank's block
// of this rank, written to dst, or in place (dst == src, as the C API says) over the rank's own
// block, src + rank * count.
//
// Channels split every block alike (channelPart); a channel moves its part of the blocks in
// slices of one chunk, and for each slice, ring position p:
//   step 0        sends the block of position p-1's rank to next;
//   steps 1..n-2  receive the partial sum of position p-j-1's block from prev, reduce their own
//                 into it, pass it on;
//   step n-1      receives the partial sum of its own block, reduces its own: the result.
// Each block's fold starts at the rank after its owner and ends at the owner (op(received, own)).
#pragma once

#include <cstddef>

#include "kernels/device/chunks.hpp"
#include "kernels/device/primitives.hpp"
#include "kernels/device/ring.hpp"

namespace tutti::kernels::device {

template <typename Proto, typename T, typename Op, typename Group>
TUTTI_HOST_DEVICE Status ringReduceScatter(const Group& group, const RingArgs<T>& args) {
  const long n = args.nranks, p = args.position;
  const size_t count = args.count;
  const size_t rank = static_cast<size_t>(rankAt(args.ranks, p, 0, n));
  T* out = args.dst == args.src ? args.dst + rank * count : args.dst;
  const Range mine = channelPart<T>(count, args.nchannels, args.channel);
  auto block = [&](long shift) {
    return args.src + static_cast<size_t>(rankAt(args.ranks, p, shift, n)) * count + mine.offset;
  };
  if (n == 1) {
    if (out != args.src) groupCopy(group, out + mine.offset, block(0), mine.count * sizeof(T));
    return Status::kOk;
  }

  Primitives<Proto, T, Op, Group> prims(group, args.fromPrev, args.toNext, args.signal);
  const size_t sliceElems = chunkElems<T>(prims.chunkBytes());
  for (size_t base = 0; base < mine.count; base += sliceElems) {
    const size_t len = smallerOf(mine.count - base, sliceElems);
    prims.send(block(-1) + base, len);
    for (long j = 2; j < n; ++j) prims.recvReduceSend(block(-j) + base, len);
    prims.recvReduceCopy(block(0) + base, out + mine.offset + base, len);
    if (prims.status() != Status::kOk) break;
  }
  return prims.status();
}

}  // namespace tutti::kernels::device
