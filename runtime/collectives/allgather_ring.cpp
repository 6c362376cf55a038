// Ring allgather: rank r's block travels r → r+1 → ... → r-1. Per slot-sized slice, rank r sends
// its own block (and copies it into place), then n-2 times receives block r-j, writes it and
// passes it on, and finally receives block r+1.
#include "runtime/collectives/primitives.hpp"
#include "runtime/collectives/ring_view.hpp"

namespace tutti::runtime {

void allgatherRing(OpContext& ctx, const CollectiveArgs& args) {
  const RingView ring(ctx.comm);
  const Buffers buffers(ctx, args);
  const size_t block = args.count;
  const Sections slices(block, 1, ctx.slotElems());
  for (size_t s = 0; s < slices.size(); ++s) {
    const Range slice = slices.chunk(s, 0);
    auto at = [&](long b) {
      return buffers.out(static_cast<size_t>(modRank(b, ring.n)) * block + slice.offset);
    };
    // Own block: out to the ring and into place (a no-op in-place, where src is already there).
    transfer(ctx, {{}, buffers.in(slice.offset), at(ring.rank), {&ring.next, 1}}, slice.count);
    for (int j = 1; j < ring.n - 1; ++j)
      recvCopySend(ctx, ring.prev, at(ring.rank - j), ring.next, slice.count);
    recv(ctx, ring.prev, at(ring.rank + 1), slice.count);
  }
}

}  // namespace tutti::runtime
