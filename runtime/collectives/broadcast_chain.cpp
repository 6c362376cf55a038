// Pipelined broadcast along the communicator's ring (ring_view.hpp) cut open before the root: the
// root, the rank after it, ..., the rank before it. The root sends slot-sized slices, every other
// rank receives each slice, writes it and passes it on (the last only receives). With FIFOs of
// several slots all links of the chain are busy at once.
#include "runtime/collectives/primitives.hpp"
#include "runtime/collectives/ring_view.hpp"

namespace tutti::runtime {

void broadcastChain(OpContext& ctx, const CollectiveArgs& args) {
  const RingView ring(ctx.group);
  const Buffers buffers(ctx, args);
  const int position = ring.distanceFrom(args.root);
  const Sections slices(args.count, 1, ctx.slotElems());
  for (size_t s = 0; s < slices.size(); ++s) {
    const Range slice = slices.chunk(s, 0);
    char* out = buffers.out(slice.offset);
    if (position == 0)
      transfer(ctx, {{}, buffers.in(slice.offset), out, {&ring.next, 1}}, slice.count);
    else if (position == ring.n - 1)
      recv(ctx, ring.prev, out, slice.count);
    else
      recvCopySend(ctx, ring.prev, out, ring.next, slice.count);
  }
}

}  // namespace tutti::runtime
