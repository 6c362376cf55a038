// Ring allgather: rank r's block travels around the ring (ring_view.hpp) from r's position p to
// p+1, ..., p-1. Per slot-sized slice, the rank at position p sends its own block (and copies it
// into place), then n-2 times receives the block of the rank at p-j, writes it and passes it on,
// and finally receives the block of the rank at p+1. Blocks land at their rank's offset.
#include "runtime/collectives/primitives.hpp"
#include "runtime/collectives/ring_view.hpp"

namespace tutti::runtime {

void allgatherRing(OpContext& ctx, const CollectiveArgs& args) {
  const RingView ring(ctx.group);
  const Buffers buffers(ctx, args);
  const size_t block = args.count;
  const Sections slices(block, 1, ctx.slotElems());
  for (size_t s = 0; s < slices.size(); ++s) {
    const Range slice = slices.chunk(s, 0);
    // The block of the rank at ring position `at`.
    auto blockAt = [&](long at) {
      return buffers.out(static_cast<size_t>(ring.rankAt(at)) * block + slice.offset);
    };
    const int p = ring.position;
    // Own block: out to the ring and into place (a no-op in-place, where src is already there).
    transfer(ctx, {{}, buffers.in(slice.offset), blockAt(p), {&ring.next, 1}}, slice.count);
    for (int j = 1; j < ring.n - 1; ++j)
      recvCopySend(ctx, ring.prev, blockAt(p - j), ring.next, slice.count);
    recv(ctx, ring.prev, blockAt(p + 1), slice.count);
  }
}

}  // namespace tutti::runtime
