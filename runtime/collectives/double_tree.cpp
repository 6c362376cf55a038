#include "runtime/collectives/double_tree.hpp"

#include <cstddef>

namespace tutti::runtime {
namespace {

int trailingZeros(int value) {
  return __builtin_ctz(static_cast<unsigned>(value));
}

// The parent in the infinite in-order tree: of p - 2^k and p + 2^k, the one with k+1 trailing
// zeros.
int naturalParent(int position) {
  const int step = 1 << trailingZeros(position);
  return (position & (step << 1)) ? position - step : position + step;
}

// Parent position in the tree truncated to 1..n (0 for the root, the largest power of two <= n).
// Every position <= n descends from that root, so climbing past missing nodes always ends there.
int parentPosition(int position, int n) {
  const int root = 1 << (31 - __builtin_clz(static_cast<unsigned>(n)));
  if (position == root) return 0;
  int up = naturalParent(position);
  while (up > n) up = naturalParent(up);
  return up;
}

int toPosition(int rank, int n, int tree) {
  if (tree == 0) return rank + 1;
  const int mapped = (n % 2 == 0) ? n - 1 - rank : (rank + n - 1) % n;
  return mapped + 1;
}

int toRank(int position, int n, int tree) {
  const int index = position - 1;
  if (tree == 0) return index;
  return (n % 2 == 0) ? n - 1 - index : (index + 1) % n;
}

}  // namespace

TreeNode treeNode(int nranks, int rank, int tree) {
  TreeNode node;
  const int position = toPosition(rank, nranks, tree);
  const int up = parentPosition(position, nranks);
  node.parent = up == 0 ? -1 : toRank(up, nranks, tree);
  for (int other = 1; other <= nranks; ++other) {
    if (other != position && parentPosition(other, nranks) == position && node.nchildren < 2)
      node.children[static_cast<size_t>(node.nchildren++)] = toRank(other, nranks, tree);
  }
  return node;
}

}  // namespace tutti::runtime
