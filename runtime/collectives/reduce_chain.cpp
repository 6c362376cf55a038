// Pipelined reduce along the communicator's ring (ring_view.hpp) cut open after the root: the rank
// after the root, the one after that, ..., the root last. The first rank sends its slices, each
// next one adds its own and passes the partial sum on, and the root adds its own last and writes
// the result. Elements are folded in chain order on every run.
#include "runtime/collectives/primitives.hpp"
#include "runtime/collectives/ring_view.hpp"

namespace tutti::runtime {

void reduceChain(OpContext& ctx, const CollectiveArgs& args) {
  const RingView ring(ctx.group);
  const Buffers buffers(ctx, args);
  const int position = modRank(ring.distanceFrom(args.root) - 1, ring.n);  // n-1 at the root
  const Sections slices(args.count, 1, ctx.slotElems());
  for (size_t s = 0; s < slices.size(); ++s) {
    const Range slice = slices.chunk(s, 0);
    const char* in = buffers.in(slice.offset);
    if (position == 0)
      send(ctx, ring.next, in, slice.count);
    else if (position == ring.n - 1)
      recvReduceCopy(ctx, ring.prev, in, buffers.out(slice.offset), slice.count);
    else
      recvReduceSend(ctx, ring.prev, in, ring.next, slice.count);
  }
  if (ring.rank == args.root) finishAverage(ctx, buffers.dst, args.count);
}

}  // namespace tutti::runtime
