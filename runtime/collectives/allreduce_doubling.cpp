// Recursive-doubling all-reduce, the latency path for four ranks and more: in round k every rank
// swaps its partial result with rank (its rank XOR 2^k) and folds the two, so after log2(n)
// rounds every rank holds the whole reduction. One message out and one in per round, where
// one-shot sends n-1 and receives n-1 (over TCP each a system call, and a wake-up) and the ring
// and the tree take 2(n-1) and 2 log2(n) steps. A world that is not a power of two first folds
// each of its last n - 2^k ranks into a partner among the first ones, which hands it the result
// at the end. Both ranks of a pair fold the lower ranks' partial first, so every rank computes the
// same expression in the same order: identical bits everywhere.
#include <bit>

#include "kernels/kernels.hpp"
#include "runtime/collectives/algorithm.hpp"
#include "runtime/collectives/chunking.hpp"
#include "runtime/collectives/primitives.hpp"

namespace tutti::runtime {
namespace {

// Sends `elems` from `data` through a slot of its own, never in place: the rank overwrites its
// partial with the next fold (and an extra rank its input with the result) while the message may
// still wait for its socket, where a send in place keeps only a pointer (tcp).
void sendCopy(OpContext& ctx, int peer, const void* data, size_t elems) {
  const size_t bytes = elems * ctx.typeSize();
  void* slot = ctx.acquire(peer);
  kernels::copy(&slot, 1, data, bytes, ctx.stores);
  ctx.post(peer, bytes);
}

// out = the lower rank's partial (op) the higher rank's, from this rank's `mine` and what
// `peer` sent.
void foldWith(OpContext& ctx, int peer, const void* mine, void* out, size_t elems) {
  const void* theirs = ctx.peek(peer, elems * ctx.typeSize());
  const bool mineFirst = ctx.group.rank < peer;
  const void* inputs[2] = {mineFirst ? mine : theirs, mineFirst ? theirs : mine};
  kernels::reduce(&out, 1, inputs, 2, elems, ctx.dtype, ctx.op, ctx.stores);
  ctx.release(peer);
}

}  // namespace

void allreduceDoubling(OpContext& ctx, const CollectiveArgs& args) {
  const int n = ctx.group.size, r = ctx.group.rank;
  // The largest power of two not above n: the ranks that double.
  const int blocks = static_cast<int>(std::bit_floor(static_cast<unsigned>(n)));
  const size_t size = ctx.typeSize();
  const char* src = static_cast<const char*>(args.send);
  char* dst = static_cast<char*>(args.recv);
  const Sections slices(args.count, 1, ctx.slotElems());
  for (size_t s = 0; s < slices.size(); ++s) {
    const Range slice = slices.chunk(s, 0);
    const void* mine = src + slice.offset * size;
    void* out = dst + slice.offset * size;
    if (r >= blocks) {  // folded into rank r - blocks, which returns the result
      sendCopy(ctx, r - blocks, mine, slice.count);
      recv(ctx, r - blocks, out, slice.count);
      continue;
    }
    const bool hasExtra = r + blocks < n;
    if (hasExtra) {
      foldWith(ctx, r + blocks, mine, out, slice.count);
      mine = out;
    }
    for (int distance = 1; distance < blocks; distance *= 2) {
      const int partner = r ^ distance;
      sendCopy(ctx, partner, mine, slice.count);
      foldWith(ctx, partner, mine, out, slice.count);
      mine = out;
    }
    if (mine != out) kernels::copy(&out, 1, mine, slice.count * size, ctx.stores);  // one rank
    if (hasExtra) sendCopy(ctx, r + blocks, out, slice.count);
  }
  finishAverage(ctx, dst, args.count);
}

}  // namespace tutti::runtime
