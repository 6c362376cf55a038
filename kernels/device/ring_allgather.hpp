// kernels/device/ring_allgather.hpp: the ring allgather one thread group runs for one channel
// (NCCL's schedule). src holds `count` elements; dst holds nranks blocks of `count`, block b from
// rank b (the rank at some ring position, RingArgs::ranks). In place (the C API's layout): src ==
// dst + rank * count.
//
// Channels split every block alike (channelPart); a channel moves its part of the blocks in
// slices of one chunk, and for each slice, ring position p:
//   step 0        copies its own block into place and sends it to next;
//   steps 1..n-2  receive the block of position p-j's rank from prev, write it out, pass it on;
//   step n-1      receives the last block, position p+1's.
// Nothing is reduced, so the element type does not matter: the kernel runs it on bytes.
#pragma once

#include <cstddef>

#include "kernels/device/chunks.hpp"
#include "kernels/device/primitives.hpp"
#include "kernels/device/ring.hpp"

namespace tutti::kernels::device {

template <typename Proto, typename T, typename Group>
TUTTI_HOST_DEVICE Status ringAllGather(const Group& group, const RingArgs<T>& args) {
  const long n = args.nranks, p = args.position;
  const size_t count = args.count;
  const Range mine = channelPart<T>(count, args.nchannels, args.channel);
  const T* src = args.src + mine.offset;
  auto block = [&](long shift) {
    return args.dst + static_cast<size_t>(rankAt(args.ranks, p, shift, n)) * count + mine.offset;
  };
  T* own = block(0);
  if (n == 1) {
    if (own != src) groupCopy(group, own, src, mine.count * sizeof(T));
    return Status::kOk;
  }

  Primitives<Proto, T, OpSum, Group> prims(group, args.fromPrev, args.toNext, args.signal);
  const size_t sliceElems = chunkElems<T>(prims.chunkBytes());
  for (size_t base = 0; base < mine.count; base += sliceElems) {
    const size_t len = smallerOf(mine.count - base, sliceElems);
    if (own == src) {
      prims.send(src + base, len);
    } else {
      prims.copySend(src + base, own + base, len);
    }
    for (long j = 1; j < n - 1; ++j) prims.recvCopySend(block(-j) + base, len);
    prims.recv(block(1) + base, len);
    if (prims.status() != Status::kOk) break;
  }
  return prims.status();
}

}  // namespace tutti::kernels::device
