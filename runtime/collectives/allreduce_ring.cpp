// Ring all-reduce: a reduce-scatter followed by an allgather around the ring 0 → 1 → ... → n-1 → 0.
//
// The buffer is processed in sections of n chunks (one slot each). In a section, rank r:
//   step 0        sends chunk r-1 to r+1;
//   steps 1..n-2  receive chunk r-j from r-1, add their own part and pass it on;
//   step n-1      receives chunk r, adds their own part: chunk r is final; it is written to the
//                 output and passed on;
//   steps n..2n-3 receive a final chunk, write it out and pass it on;
//   step 2n-2     receives the last final chunk (r+1).
// Every element is reduced once, by one rank, then copied: all ranks hold identical bits. Slots
// are FIFOs, so section s+1 flows while section s is still being reduced downstream.
#include "runtime/collectives/algorithm.hpp"
#include "runtime/collectives/chunking.hpp"
#include "runtime/collectives/primitives.hpp"

namespace tutti::runtime {

void allreduceRing(OpContext& ctx, const CollectiveArgs& args) {
  const int n = ctx.comm.size(), r = ctx.comm.rank();
  const int next = modRank(r + 1, n), prev = modRank(r - 1, n);
  const size_t size = ctx.typeSize();
  const char* src = static_cast<const char*>(args.send);
  char* dst = static_cast<char*>(args.recv);
  const Sections sections(args.count, static_cast<size_t>(n), ctx.slotElems());
  for (size_t s = 0; s < sections.size(); ++s) {
    auto chunk = [&](long index) {
      return sections.chunk(s, static_cast<size_t>(modRank(index, n)));
    };
    Range c = chunk(r - 1);
    send(ctx, next, src + c.offset * size, c.count);
    for (int j = 2; j < n; ++j) {
      c = chunk(r - j);
      recvReduceSend(ctx, prev, src + c.offset * size, next, c.count);
    }
    c = chunk(r);
    recvReduceCopySend(ctx, prev, src + c.offset * size, dst + c.offset * size, next, c.count);
    for (int j = 1; j < n - 1; ++j) {
      c = chunk(r - j);
      recvCopySend(ctx, prev, dst + c.offset * size, next, c.count);
    }
    c = chunk(r + 1);
    recv(ctx, prev, dst + c.offset * size, c.count);
  }
  finishAverage(ctx, dst, args.count);
}

}  // namespace tutti::runtime
