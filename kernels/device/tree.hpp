// kernels/device/tree.hpp: what one thread group (one channel) of a tree schedule is given: the
// FIFOs to and from its parent and its (at most kMaxPeers) children, one connection per
// direction, up (toward the root) and down. Which tree is the host's affair (the runtime gives
// each channel one of its double binary tree's, topology/double_tree.hpp).
#pragma once

#include <cstddef>

#include "kernels/device/fifo.hpp"
#include "kernels/device/primitives.hpp"

namespace tutti::kernels::device {

// One node's connections on one channel. Every FIFO of a tree has the same slot size, so that
// parent and children cut the same chunks.
struct TreeLinks {
  bool hasParent;
  int nchildren;
  Fifo toParent;                 // up
  Fifo fromParent;               // down
  Fifo fromChildren[kMaxPeers];  // up, in the children's order
  Fifo toChildren[kMaxPeers];    // down
};

template <typename T>
struct TreeArgs {
  const T* src;
  T* dst;  // may be src
  size_t count;
  int channel;
  int nchannels;
  TreeLinks links;  // no parent and no children: a tree of one rank
  AbortSignal signal;
};

}  // namespace tutti::kernels::device
