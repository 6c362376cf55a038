// Ring reduce-scatter: block b (recvcount elements) of every rank's input is reduced into rank b's
// output. Blocks are cut into slot-sized slices; for each slice, rank r sends its block r-1 slice
// to r+1, then n-2 times receives block r-j, adds its own and passes it on, and finally receives
// block r, adds its own and writes the result.
#include "runtime/collectives/primitives.hpp"
#include "runtime/collectives/ring_view.hpp"

namespace tutti::runtime {

void reduceScatterRing(OpContext& ctx, const CollectiveArgs& args) {
  const RingView ring(ctx.comm);
  const Buffers buffers(ctx, args);
  const size_t block = args.count;
  // In-place: the output is the rank's own block of the input, which is read last.
  const Sections slices(block, 1, ctx.slotElems());
  for (size_t s = 0; s < slices.size(); ++s) {
    const Range slice = slices.chunk(s, 0);
    auto at = [&](long b) {
      return buffers.in(static_cast<size_t>(modRank(b, ring.n)) * block + slice.offset);
    };
    send(ctx, ring.next, at(ring.rank - 1), slice.count);
    for (int j = 2; j < ring.n; ++j)
      recvReduceSend(ctx, ring.prev, at(ring.rank - j), ring.next, slice.count);
    recvReduceCopy(ctx, ring.prev, at(ring.rank), buffers.out(slice.offset), slice.count);
  }
  finishAverage(ctx, buffers.dst, block);
}

}  // namespace tutti::runtime
