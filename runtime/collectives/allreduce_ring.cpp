// Ring all-reduce: a reduce-scatter followed by an allgather around the communicator's ring
// (ring_view.hpp). Chunks are numbered by ring position, not rank: which rank reduces which chunk
// does not matter, since every rank ends with the whole buffer.
//
// The buffer is processed in sections of n chunks (one slot each). In a section, position p:
//   step 0        sends chunk p-1 to p+1;
//   steps 1..n-2  receive chunk p-j from p-1, add their own part and pass it on;
//   step n-1      receives chunk p, adds their own part: chunk p is final; it is written to the
//                 output and passed on;
//   steps n..2n-3 receive a final chunk, write it out and pass it on;
//   step 2n-2     receives the last final chunk (p+1).
// Every element is reduced once, by one rank, then copied: all ranks hold identical bits. Slots
// are FIFOs, so section s+1 flows while section s is still being reduced downstream.
#include "runtime/collectives/primitives.hpp"
#include "runtime/collectives/ring_view.hpp"

namespace tutti::runtime {

void allreduceRing(OpContext& ctx, const CollectiveArgs& args) {
  const RingView ring(ctx.group);
  const Buffers buffers(ctx, args);
  const int p = ring.position, next = ring.next, prev = ring.prev;
  const Sections sections(args.count, static_cast<size_t>(ring.n), ctx.slotElems());
  for (size_t s = 0; s < sections.size(); ++s) {
    auto chunk = [&](long index) {
      return sections.chunk(s, static_cast<size_t>(modRank(index, ring.n)));
    };
    Range c = chunk(p - 1);
    send(ctx, next, buffers.in(c.offset), c.count);
    for (int j = 2; j < ring.n; ++j) {
      c = chunk(p - j);
      recvReduceSend(ctx, prev, buffers.in(c.offset), next, c.count);
    }
    c = chunk(p);
    recvReduceCopySend(ctx, prev, buffers.in(c.offset), buffers.out(c.offset), next, c.count);
    for (int j = 1; j < ring.n - 1; ++j) {
      c = chunk(p - j);
      recvCopySend(ctx, prev, buffers.out(c.offset), next, c.count);
    }
    c = chunk(p + 1);
    recv(ctx, prev, buffers.out(c.offset), c.count);
  }
  finishAverage(ctx, buffers.dst, args.count);
}

}  // namespace tutti::runtime
