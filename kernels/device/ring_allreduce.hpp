// kernels/device/ring_allreduce.hpp: the ring all-reduce one thread group runs for one channel,
// the same code on the GPU (a block per channel, collective_kernel.cu) and in the CPU tests (a
// thread per rank per channel). The host's ring (runtime/collectives/allreduce_ring.cpp) has the
// same schedule over its own transports:
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
#pragma once

#include <cstddef>

#include "kernels/device/chunks.hpp"
#include "kernels/device/primitives.hpp"
#include "kernels/device/ring.hpp"

namespace tutti::kernels::device {

template <typename Proto, typename T, typename Op, typename Group>
TUTTI_HOST_DEVICE Status ringAllReduce(const Group& group, const RingArgs<T>& args) {
  const Range mine = channelPart<T>(args.count, args.nchannels, args.channel);
  const T* src = args.src + mine.offset;
  T* dst = args.dst + mine.offset;
  if (args.nranks == 1) {
    if (src != dst) groupCopy(group, dst, src, mine.count * sizeof(T));
    return Status::kOk;
  }

  Primitives<Proto, T, Op, Group> prims(group, args.fromPrev, args.toNext, args.signal);
  const long n = args.nranks, p = args.position;
  const size_t sectionElems = static_cast<size_t>(n) * chunkElems<T>(prims.chunkBytes());
  for (size_t base = 0; base < mine.count; base += sectionElems) {
    const size_t inSection = smallerOf(mine.count - base, sectionElems);
    auto chunk = [&](long shift) {
      Range c = alignedSplit(inSection, static_cast<size_t>(n),
                             static_cast<size_t>(ringIndex(p, shift, n)), kAlignElems<T>);
      c.offset += base;
      return c;
    };
    Range c = chunk(-1);
    prims.send(src + c.offset, c.count);
    for (long j = 2; j < n; ++j) {
      c = chunk(-j);
      prims.recvReduceSend(src + c.offset, c.count);
    }
    c = chunk(0);
    prims.recvReduceCopySend(src + c.offset, dst + c.offset, c.count);
    for (long j = 1; j < n - 1; ++j) {
      c = chunk(-j);
      prims.recvCopySend(dst + c.offset, c.count);
    }
    c = chunk(1);
    prims.recv(dst + c.offset, c.count);
    if (prims.status() != Status::kOk) break;
  }
  return prims.status();
}

}  // namespace tutti::kernels::device
