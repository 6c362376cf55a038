// Ring reduce-scatter: block b (recvcount elements) of every rank's input is reduced into rank b's
// output. Blocks are cut into slot-sized slices; for each slice, rank r sends its block r-1 slice
// to r+1, then n-2 times receives block r-j, adds its own and passes it on, and finally receives
// block r, adds its own and writes the result.
#include "runtime/collectives/algorithm.hpp"
#include "runtime/collectives/chunking.hpp"
#include "runtime/collectives/primitives.hpp"

namespace tutti::runtime {

void reduceScatterRing(OpContext& ctx, const CollectiveArgs& args) {
  const int n = ctx.comm.size(), r = ctx.comm.rank();
  const int next = modRank(r + 1, n), prev = modRank(r - 1, n);
  const size_t size = ctx.typeSize(), block = args.count;
  const char* src = static_cast<const char*>(args.send);
  char* dst = static_cast<char*>(args.recv);
  // In-place: the output is the rank's own block of the input, which is read last.
  const Sections slices(block, 1, ctx.slotElems());
  for (size_t s = 0; s < slices.size(); ++s) {
    const Range slice = slices.chunk(s, 0);
    auto at = [&](long b) {
      return src + (static_cast<size_t>(modRank(b, n)) * block + slice.offset) * size;
    };
    send(ctx, next, at(r - 1), slice.count);
    for (int j = 2; j < n; ++j) recvReduceSend(ctx, prev, at(r - j), next, slice.count);
    recvReduceCopy(ctx, prev, at(r), dst + slice.offset * size, slice.count);
  }
  finishAverage(ctx, dst, block);
}

}  // namespace tutti::runtime
