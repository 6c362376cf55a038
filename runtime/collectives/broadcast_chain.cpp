// Pipelined broadcast along the chain root → root+1 → ... → root-1: the root sends slot-sized
// slices, every other rank receives each slice, writes it and passes it on (the last only
// receives). With FIFOs of several slots all links of the chain are busy at once.
#include "runtime/collectives/algorithm.hpp"
#include "runtime/collectives/chunking.hpp"
#include "runtime/collectives/primitives.hpp"

namespace tutti::runtime {

void broadcastChain(OpContext& ctx, const CollectiveArgs& args) {
  const int n = ctx.comm.size(), r = ctx.comm.rank();
  const int position = modRank(r - args.root, n);  // 0 at the root
  const int next = modRank(r + 1, n), prev = modRank(r - 1, n);
  const size_t size = ctx.typeSize();
  const char* src = static_cast<const char*>(args.send);
  char* dst = static_cast<char*>(args.recv);
  const Sections slices(args.count, 1, ctx.slotElems());
  for (size_t s = 0; s < slices.size(); ++s) {
    const Range slice = slices.chunk(s, 0);
    const size_t offset = slice.offset * size;
    if (position == 0)
      transfer(ctx, {{}, src + offset, dst + offset, {&next, 1}}, slice.count);
    else if (position == n - 1)
      recv(ctx, prev, dst + offset, slice.count);
    else
      recvCopySend(ctx, prev, dst + offset, next, slice.count);
  }
}

}  // namespace tutti::runtime
