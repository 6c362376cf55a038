// kernels/device/ring.hpp: what one thread group (one channel) of a ring schedule is given. The
// ring schedules (ring_*.hpp) and the chains from and to a root (chain_*.hpp) all run over the
// ring's FIFOs, prev -> me -> next.
#pragma once

#include <cstddef>

#include "kernels/device/fifo.hpp"

namespace tutti::kernels::device {

template <typename T>
struct RingArgs {
  const T* src;
  T* dst;        // may be src; the collective says where the output lies then
  size_t count;  // the C API's count (reduce-scatter, allgather: one rank's block)
  int nranks;
  int position;  // this rank's place in the ring; prev is position - 1, next position + 1
  int root;      // broadcast and reduce: the root's place in the ring
  // [position]: the rank there (nranks entries the group can read), whose block the position
  // handles where blocks belong to ranks (reduce-scatter, allgather); null: the ring is in rank
  // order.
  const int* ranks;
  int channel;
  int nchannels;
  Fifo fromPrev;  // this channel's FIFO from prev (unused with one rank)
  Fifo toNext;    // this channel's FIFO to next
  AbortSignal signal;
};

// The ring position `position + shift`, wrapped into [0, nranks).
TUTTI_HOST_DEVICE inline long ringIndex(long position, long shift, long nranks) {
  return ((position + shift) % nranks + nranks) % nranks;
}

// The rank at ring position `position + shift`.
TUTTI_HOST_DEVICE inline long rankAt(const int* ranks, long position, long shift, long nranks) {
  const long at = ringIndex(position, shift, nranks);
  return ranks ? ranks[at] : at;
}

// Where `rank` sits in a ring whose rank at each position is `ranks` (null: rank order); a rank
// not in it, as a root that does not matter, stays where it is.
TUTTI_HOST_DEVICE inline int positionOf(const int* ranks, int rank, int nranks) {
  if (!ranks) return rank;
  for (int p = 0; p < nranks; ++p)
    if (ranks[p] == rank) return p;
  return rank;
}

}  // namespace tutti::kernels::device
