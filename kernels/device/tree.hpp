// kernels/device/tree.hpp: what one thread group (one channel) of a tree schedule is given: the
// FIFOs to and from its parent and its (at most kMaxPeers) children, one connection per
// direction, up (toward the root) and down. binaryTree is the shape the tests use and the
// runtime's first tree: positions as a binary heap, 0 the root, i's children 2i+1 and 2i+2 (NCCL
// builds a double binary tree across hosts; a second tree is a later step).
#pragma once

#include <cstddef>

#include "kernels/device/fifo.hpp"
#include "kernels/device/primitives.hpp"

namespace tutti::kernels::device {

struct TreeNode {
  int parent;  // -1 at the root
  int nchildren;
  int children[kMaxPeers];
};

TUTTI_HOST_DEVICE inline TreeNode binaryTree(int position, int nranks) {
  TreeNode node{position == 0 ? -1 : (position - 1) / 2, 0, {-1, -1}};
  for (int c = 2 * position + 1; c <= 2 * position + 2 && c < nranks; ++c) {
    node.children[node.nchildren++] = c;
  }
  return node;
}

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
