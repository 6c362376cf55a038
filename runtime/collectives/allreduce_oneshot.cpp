// One-shot all-reduce, the latency path: every rank sends its whole (small) buffer to every other
// rank, then folds all n contributions itself in rank order. One step instead of 2(n-1), at the
// price of n-1 times the traffic, which is what small messages want. Folding in rank order on
// every rank gives identical bits everywhere.
#include <array>
#include <vector>

#include "kernels/kernels.hpp"
#include "runtime/collectives/algorithm.hpp"
#include "runtime/collectives/chunking.hpp"

namespace tutti::runtime {

void allreduceOneShot(OpContext& ctx, const CollectiveArgs& args) {
  const int n = ctx.group.size, r = ctx.group.rank;
  const size_t size = ctx.typeSize();
  const char* src = static_cast<const char*>(args.send);
  char* dst = static_cast<char*>(args.recv);
  // No allocation on the latency path for the usual world sizes.
  constexpr int kOnStack = 16;
  std::array<const void*, kOnStack> local{};
  std::vector<const void*> heap(n > kOnStack ? static_cast<size_t>(n) : 0);
  const void** inputs = n > kOnStack ? heap.data() : local.data();
  const Sections slices(args.count, 1, ctx.slotElems());
  for (size_t s = 0; s < slices.size(); ++s) {
    const Range slice = slices.chunk(s, 0);
    const size_t offset = slice.offset * size, bytes = slice.count * size;
    for (int k = 1; k < n; ++k) {
      const int peer = modRank(r + k, n);
      void* slot = ctx.acquire(peer);
      kernels::copy(&slot, 1, src + offset, bytes, ctx.stores);
      ctx.post(peer, bytes);
    }
    for (int peer = 0; peer < n; ++peer)
      inputs[static_cast<size_t>(peer)] = peer == r ? src + offset : ctx.peek(peer, bytes);
    void* out = dst + offset;
    kernels::reduce(&out, 1, inputs, n, slice.count, ctx.dtype, ctx.op, ctx.stores);
    for (int peer = 0; peer < n; ++peer)
      if (peer != r) ctx.release(peer);
  }
  finishAverage(ctx, dst, args.count);
}

}  // namespace tutti::runtime
