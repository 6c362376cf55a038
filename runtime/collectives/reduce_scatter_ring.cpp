// Ring reduce-scatter: block b (recvcount elements) of every rank's input is reduced into rank b's
// output. Blocks are cut into slot-sized slices; for each slice, the rank at ring position p
// (ring_view.hpp) sends its slice of the block of the rank at p-1 to p+1, then n-2 times receives
// the block of the rank at p-j, adds its own and passes it on, and finally receives its own
// block, adds its own part and writes the result.
#include "runtime/collectives/primitives.hpp"
#include "runtime/collectives/ring_view.hpp"

namespace tutti::runtime {

void reduceScatterRing(OpContext& ctx, const CollectiveArgs& args) {
  const RingView ring(ctx.group);
  const Buffers buffers(ctx, args);
  const size_t block = args.count;
  // In-place: the output is the rank's own block of the input, which is read last.
  const Sections slices(block, 1, ctx.slotElems());
  for (size_t s = 0; s < slices.size(); ++s) {
    const Range slice = slices.chunk(s, 0);
    // This rank's part of the block of the rank at ring position `at`.
    auto blockAt = [&](long at) {
      return buffers.in(static_cast<size_t>(ring.rankAt(at)) * block + slice.offset);
    };
    const int p = ring.position;
    send(ctx, ring.next, blockAt(p - 1), slice.count);
    for (int j = 2; j < ring.n; ++j)
      recvReduceSend(ctx, ring.prev, blockAt(p - j), ring.next, slice.count);
    recvReduceCopy(ctx, ring.prev, blockAt(p), buffers.out(slice.offset), slice.count);
  }
  finishAverage(ctx, buffers.dst, block);
}

}  // namespace tutti::runtime
