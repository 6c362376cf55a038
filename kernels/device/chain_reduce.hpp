// kernels/device/chain_reduce.hpp: reduce as a pipelined chain along the ring, ending at the root
// (NCCL's ring reduce). Every rank's src (count elements) is reduced into the root's dst (which
// may be its src); other ranks' dst is not written.
//
// Each channel's part (channelPart) moves in chunks of at most one slot: the rank after the root
// sends its chunk to next, every rank after it receives the partial result, reduces its own into
// it and passes it on, and the root receives, reduces its own and writes the result. The fold
// runs from the root's next around to the root (op(received, own)).
#pragma once

#include <cstddef>

#include "kernels/device/chunks.hpp"
#include "kernels/device/primitives.hpp"
#include "kernels/device/ring.hpp"

namespace tutti::kernels::device {

template <typename Proto, typename T, typename Op, typename Group>
TUTTI_HOST_DEVICE Status chainReduce(const Group& group, const RingArgs<T>& args) {
  const Range mine = channelPart<T>(args.count, args.nchannels, args.channel);
  const long n = args.nranks;
  const long link = ringIndex(args.position, -args.root - 1, n);  // n - 1: the root
  const T* src = args.src + mine.offset;
  if (n == 1) {
    T* dst = args.dst + mine.offset;
    if (src != dst) groupCopy(group, dst, src, mine.count * sizeof(T));
    return Status::kOk;
  }

  Primitives<Proto, T, Op, Group> prims(group, args.fromPrev, args.toNext, args.signal);
  const size_t chunk = chunkElems<T>(prims.chunkBytes());
  for (size_t base = 0; base < mine.count; base += chunk) {
    const size_t len = smallerOf(mine.count - base, chunk);
    if (link == 0) {
      prims.send(src + base, len);
    } else if (link < n - 1) {
      prims.recvReduceSend(src + base, len);
    } else {
      prims.recvReduceCopy(src + base, args.dst + mine.offset + base, len);
    }
    if (prims.status() != Status::kOk) break;
  }
  return prims.status();
}

}  // namespace tutti::kernels::device
