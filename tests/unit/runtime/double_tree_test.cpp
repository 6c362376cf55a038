// The double binary tree's shape (runtime/collectives/double_tree.hpp), for every n from 1 to 64:
// each tree holds every rank exactly once under one root, parent and child links agree, nobody
// has more than two children, the depth is at most log2(n), and, as in NCCL's double tree, every
// rank is a leaf in at least one of the two trees (interior in at most one).
#include "runtime/collectives/double_tree.hpp"

#include <catch2/catch.hpp>
#include <vector>

using namespace tutti::runtime;

namespace {

int floorLog2(int n) {
  int log = 0;
  while ((2 << log) <= n) ++log;
  return log;
}

std::vector<TreeNode> treeOf(int n, int tree) {
  std::vector<TreeNode> nodes;
  for (int rank = 0; rank < n; ++rank) nodes.push_back(treeNode(n, rank, tree));
  return nodes;
}

}  // namespace

TEST_CASE("each tree holds every rank once, with consistent links, at most log2(n) deep") {
  for (int n = 1; n <= 64; ++n)
    for (int tree = 0; tree < 2; ++tree) {
      INFO(n << " ranks, tree " << tree);
      const std::vector<TreeNode> nodes = treeOf(n, tree);
      int root = -1, links = 0;
      for (int rank = 0; rank < n; ++rank) {
        const TreeNode& node = nodes[static_cast<size_t>(rank)];
        INFO("rank " << rank);
        REQUIRE(node.parent >= -1);
        REQUIRE(node.parent < n);
        REQUIRE(node.parent != rank);
        if (node.parent == -1) {
          REQUIRE(root == -1);  // one root
          root = rank;
        }
        REQUIRE(node.nchildren >= 0);
        REQUIRE(node.nchildren <= 2);
        for (int i = 0; i < node.nchildren; ++i) {
          const int child = node.children[static_cast<size_t>(i)];
          REQUIRE(child >= 0);
          REQUIRE(child < n);
          REQUIRE(nodes[static_cast<size_t>(child)].parent == rank);
        }
        if (node.nchildren == 2) REQUIRE(node.children[0] != node.children[1]);
        links += node.nchildren;
      }
      REQUIRE(root >= 0);
      // Every non-root rank is the child of its parent: n - 1 links down.
      REQUIRE(links == n - 1);
      // Walking down from the root meets every rank exactly once, within log2(n) levels.
      std::vector<int> seen(static_cast<size_t>(n), 0);
      std::vector<int> level{root};
      int depth = 0;
      while (!level.empty()) {
        std::vector<int> below;
        for (const int rank : level) {
          REQUIRE(++seen[static_cast<size_t>(rank)] == 1);
          const TreeNode& node = nodes[static_cast<size_t>(rank)];
          for (int i = 0; i < node.nchildren; ++i)
            below.push_back(node.children[static_cast<size_t>(i)]);
        }
        if (!below.empty()) ++depth;
        level = std::move(below);
      }
      REQUIRE(std::count(seen.begin(), seen.end(), 1) == n);
      CHECK(depth <= floorLog2(n));
    }
}

TEST_CASE("every rank is a leaf in at least one of the two trees") {
  for (int n = 1; n <= 64; ++n) {
    const std::vector<TreeNode> first = treeOf(n, 0), second = treeOf(n, 1);
    for (int rank = 0; rank < n; ++rank) {
      INFO(n << " ranks, rank " << rank);
      CHECK((first[static_cast<size_t>(rank)].nchildren == 0 ||
             second[static_cast<size_t>(rank)].nchildren == 0));
    }
  }
}
