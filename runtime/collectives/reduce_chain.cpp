// Pipelined reduce along the chain root+1 → root+2 → ... → root-1 → root: the first rank sends
// its slices, each next one adds its own and passes the partial sum on, and the root adds its own
// last and writes the result. Elements are folded in chain order on every run.
#include "runtime/collectives/algorithm.hpp"
#include "runtime/collectives/chunking.hpp"
#include "runtime/collectives/primitives.hpp"

namespace tutti::runtime {

void reduceChain(OpContext& ctx, const CollectiveArgs& args) {
  const int n = ctx.comm.size(), r = ctx.comm.rank();
  const int position = modRank(r - args.root - 1, n);  // n-1 at the root
  const int next = modRank(r + 1, n), prev = modRank(r - 1, n);
  const size_t size = ctx.typeSize();
  const char* src = static_cast<const char*>(args.send);
  char* dst = static_cast<char*>(args.recv);
  const Sections slices(args.count, 1, ctx.slotElems());
  for (size_t s = 0; s < slices.size(); ++s) {
    const Range slice = slices.chunk(s, 0);
    const size_t offset = slice.offset * size;
    if (position == 0)
      send(ctx, next, src + offset, slice.count);
    else if (position == n - 1)
      recvReduceCopy(ctx, prev, src + offset, dst + offset, slice.count);
    else
      recvReduceSend(ctx, prev, src + offset, next, slice.count);
  }
  if (r == args.root) finishAverage(ctx, dst, args.count);
}

}  // namespace tutti::runtime
