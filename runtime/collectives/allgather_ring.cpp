// Ring allgather: rank r's block travels r → r+1 → ... → r-1. Per slot-sized slice, rank r sends
// its own block (and copies it into place), then n-2 times receives block r-j, writes it and
// passes it on, and finally receives block r+1.
#include "kernels/kernels.hpp"
#include "runtime/collectives/algorithm.hpp"
#include "runtime/collectives/chunking.hpp"
#include "runtime/collectives/primitives.hpp"

namespace tutti::runtime {

void allgatherRing(OpContext& ctx, const CollectiveArgs& args) {
  const int n = ctx.comm.size(), r = ctx.comm.rank();
  const int next = modRank(r + 1, n), prev = modRank(r - 1, n);
  const size_t size = ctx.typeSize(), block = args.count;
  const char* src = static_cast<const char*>(args.send);
  char* dst = static_cast<char*>(args.recv);
  const Sections slices(block, 1, ctx.slotElems());
  for (size_t s = 0; s < slices.size(); ++s) {
    const Range slice = slices.chunk(s, 0);
    auto at = [&](long b) {
      return dst + (static_cast<size_t>(modRank(b, n)) * block + slice.offset) * size;
    };
    // Own block: out to the ring and into place (a no-op in-place, where src is already there).
    transfer(ctx, {{}, src + slice.offset * size, at(r), {&next, 1}}, slice.count);
    for (int j = 1; j < n - 1; ++j) recvCopySend(ctx, prev, at(r - j), next, slice.count);
    recv(ctx, prev, at(r + 1), slice.count);
  }
}

}  // namespace tutti::runtime
