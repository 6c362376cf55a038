#include "topology/double_tree.hpp"

#include <algorithm>
#include <cstddef>
#include <utility>

#include "base/error.hpp"

namespace tutti::topology {
namespace {

// Parent of member p in tree 0 of `count` members.
int binaryParent(int count, int p) {
  if (p == 0) return -1;
  const int bit = p & -p;
  const int up = (p ^ bit) | (bit << 1);
  return up < count ? up : p ^ bit;
}

int parentIn(int count, int p, int tree) {
  if (tree == 0) return binaryParent(count, p);
  if (count % 2 == 0) {
    const int up = binaryParent(count, count - 1 - p);
    return up < 0 ? -1 : count - 1 - up;
  }
  const int up = binaryParent(count, (p + count - 1) % count);
  return up < 0 ? -1 : (up + 1) % count;
}

void link(std::vector<TreeNode>& nodes, int child, int parent) {
  nodes[static_cast<size_t>(child)].parent = parent;
  nodes[static_cast<size_t>(parent)].children.push_back(child);
}

// Each of 0..n-1 exactly once across the hosts, none empty.
size_t checkedRankCount(const std::vector<std::vector<int>>& hosts) {
  size_t n = 0;
  for (const std::vector<int>& ranks : hosts) {
    if (ranks.empty()) raise(ErrorCode::kInvalidArgument, "double tree: a host without ranks");
    n += ranks.size();
  }
  std::vector<bool> seen(n, false);
  for (const std::vector<int>& ranks : hosts)
    for (int rank : ranks) {
      if (rank < 0 || static_cast<size_t>(rank) >= n || seen[static_cast<size_t>(rank)])
        raise(ErrorCode::kInvalidArgument, "double tree: rank {} is out of 0..{} or on two hosts",
              rank, n - 1);
      seen[static_cast<size_t>(rank)] = true;
    }
  return n;
}

}  // namespace

std::vector<TreeNode> binaryTree(int count, int tree) {
  std::vector<TreeNode> nodes(static_cast<size_t>(std::max(count, 0)));
  for (int p = 0; p < count; ++p)
    if (const int up = parentIn(count, p, tree); up >= 0) link(nodes, p, up);
  return nodes;
}

std::vector<TreeNode> rankTree(const std::vector<std::vector<int>>& hosts, int tree) {
  std::vector<TreeNode> nodes(checkedRankCount(hosts));
  if (hosts.size() == 1) {
    const std::vector<int>& ranks = hosts[0];
    const std::vector<TreeNode> members = binaryTree(static_cast<int>(ranks.size()), tree);
    for (size_t p = 0; p < members.size(); ++p)
      if (members[p].parent >= 0)
        link(nodes, ranks[p], ranks[static_cast<size_t>(members[p].parent)]);
    return nodes;
  }
  std::vector<int> heads;
  for (const std::vector<int>& ranks : hosts) {
    std::vector<int> chain = ranks;
    if (tree == 1) std::reverse(chain.begin(), chain.end());
    for (size_t i = 1; i < chain.size(); ++i) link(nodes, chain[i], chain[i - 1]);
    heads.push_back(chain.front());
  }
  const std::vector<TreeNode> across = binaryTree(static_cast<int>(hosts.size()), tree);
  for (size_t h = 0; h < across.size(); ++h)
    if (across[h].parent >= 0) link(nodes, heads[h], heads[static_cast<size_t>(across[h].parent)]);
  return nodes;
}

int treeDepth(const std::vector<TreeNode>& tree) {
  // Breadth first from the root: a member's depth is its parent's plus one.
  std::vector<int> depth(tree.size(), 0);
  std::vector<int> level;
  for (size_t p = 0; p < tree.size(); ++p)
    if (tree[p].parent < 0) level.push_back(static_cast<int>(p));
  int deepest = 0;
  while (!level.empty()) {
    std::vector<int> next;
    for (const int member : level)
      for (const int child : tree[static_cast<size_t>(member)].children) {
        depth[static_cast<size_t>(child)] = depth[static_cast<size_t>(member)] + 1;
        deepest = std::max(deepest, depth[static_cast<size_t>(child)]);
        next.push_back(child);
      }
    level = std::move(next);
  }
  return deepest;
}

}  // namespace tutti::topology
