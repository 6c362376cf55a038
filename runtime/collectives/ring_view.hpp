// What the ring and chain algorithms share: the ring 0 → 1 → ... → n-1 → 0 seen from this rank,
// and the operation's buffers addressed by element.
#pragma once

#include <cstddef>

#include "runtime/collectives/algorithm.hpp"
#include "runtime/collectives/chunking.hpp"

namespace tutti::runtime {

struct RingView {
  int n;
  int rank;
  int next;
  int prev;

  explicit RingView(const Communicator& comm)
      : n(comm.size()),
        rank(comm.rank()),
        next(modRank(comm.rank() + 1, comm.size())),
        prev(modRank(comm.rank() - 1, comm.size())) {}
  // Position of this rank on the ring counted from `origin` (0 at the origin).
  int distanceFrom(int origin) const { return modRank(rank - origin, n); }
};

struct Buffers {
  const char* src;
  char* dst;
  size_t elemBytes;

  Buffers(const OpContext& ctx, const CollectiveArgs& args)
      : src(static_cast<const char*>(args.send)),
        dst(static_cast<char*>(args.recv)),
        elemBytes(ctx.typeSize()) {}
  const char* in(size_t elem) const { return src + elem * elemBytes; }
  char* out(size_t elem) const { return dst + elem * elemBytes; }
};

}  // namespace tutti::runtime
