// The two binary trees of the double-binary-tree all-reduce, over ranks 0..n-1.
//
// Tree 0 is an in-order binary tree on positions 1..n (position = rank + 1): a position with k
// trailing zero bits sits at height k, its parent is the neighbour at distance 2^k with k+1
// trailing zeros (or, past n, the nearest ancestor that exists). Odd positions (even ranks) are
// its leaves. Tree 1 flips the parity: mirrored (rank n-1-r) when n is even, shifted by one when n
// is odd, so that every rank is interior in at most one of the two trees and the ranks' sending
// and receiving work is balanced across the pair.
#pragma once

#include <array>

namespace tutti::runtime {

struct TreeNode {
  int parent = -1;  // -1 at the root
  std::array<int, 2> children{-1, -1};
  int nchildren = 0;
};

TreeNode treeNode(int nranks, int rank, int tree);

}  // namespace tutti::runtime
