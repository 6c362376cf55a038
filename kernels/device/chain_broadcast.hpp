// kernels/device/chain_broadcast.hpp: broadcast as a pipelined chain along the ring, starting at
// the root (NCCL's ring broadcast). The root's src (count elements) reaches every rank's dst; the
// root's dst may be its src (in place), and other ranks' src is not read.
//
// Each channel's part (channelPart) moves in chunks of at most one slot: the root sends each
// chunk to next (copying it into its own dst too when that is elsewhere), every rank after it
// receives it, writes it out and passes it on, and the last rank of the chain (the root's prev)
// only receives. Every link is busy at once after the first chunks. Nothing is reduced, so the
// element type does not matter: the kernel runs it on bytes.
#pragma once

#include <cstddef>

#include "kernels/device/chunks.hpp"
#include "kernels/device/primitives.hpp"
#include "kernels/device/ring.hpp"

namespace tutti::kernels::device {

template <typename Proto, typename T, typename Group>
TUTTI_HOST_DEVICE Status chainBroadcast(const Group& group, const RingArgs<T>& args) {
  const Range mine = channelPart<T>(args.count, args.nchannels, args.channel);
  const long n = args.nranks;
  const long link = ringIndex(args.position, -args.root, n);  // 0: the root
  const T* src = args.src + mine.offset;
  T* dst = args.dst + mine.offset;
  if (n == 1) {
    if (src != dst) groupCopy(group, dst, src, mine.count * sizeof(T));
    return Status::kOk;
  }

  Primitives<Proto, T, OpSum, Group> prims(group, args.fromPrev, args.toNext, args.signal);
  const size_t chunk = chunkElems<T>(prims.chunkBytes());
  for (size_t base = 0; base < mine.count; base += chunk) {
    const size_t len = smallerOf(mine.count - base, chunk);
    if (link == 0) {
      if (src == dst) {
        prims.send(src + base, len);
      } else {
        prims.copySend(src + base, dst + base, len);
      }
    } else if (link < n - 1) {
      prims.recvCopySend(dst + base, len);
    } else {
      prims.recv(dst + base, len);
    }
    if (prims.status() != Status::kOk) break;
  }
  return prims.status();
}

}  // namespace tutti::kernels::device
