// What the ring and chain algorithms share: the communicator's ring (GroupView::ring: planned
// by CPU locality, or TUTTI_RING_ORDER) seen from this rank, and the operation's buffers addressed
// by element.
//
// The algorithms run on ring positions: position p sends to p+1 and receives from p-1. Whatever is
// addressed by rank (a rank's block in reduce-scatter and allgather, a root) is translated at the
// edge: rankAt(p) is the rank at position p, distanceFrom(root) counts from the root's position.
// With the identity order (ranks placed in locality order) positions are ranks.
#pragma once

#include <cstddef>
#include <vector>

#include "runtime/collectives/algorithm.hpp"
#include "runtime/collectives/chunking.hpp"

namespace tutti::runtime {

struct RingView {
  const std::vector<int>& order;      // ranks in ring order
  const std::vector<int>& positions;  // positions[rank]: its place in `order`
  int n;
  int rank;
  int position;  // this rank's
  int next;      // the rank after this one on the ring
  int prev;      // the rank before it

  RingView(const CpuRing& ring, int rank)
      : order(ring.order),
        positions(ring.position),
        n(static_cast<int>(ring.order.size())),
        rank(rank),
        position(ring.position[static_cast<size_t>(rank)]),
        next(rankAt(position + 1)),
        prev(rankAt(position - 1)) {}
  explicit RingView(const GroupView& group) : RingView(group.ring, group.rank) {}

  // The rank at `position` (taken modulo n) on the ring.
  int rankAt(long at) const { return order[static_cast<size_t>(modRank(at, n))]; }
  // Position of this rank on the ring counted from rank `origin` (0 at the origin).
  int distanceFrom(int origin) const {
    return modRank(position - positions[static_cast<size_t>(origin)], n);
  }
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
