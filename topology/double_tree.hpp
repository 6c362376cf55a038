// The double binary tree, NCCL's (src/graph/trees.cc): two binary trees over the same members in
// which every member is interior (has children) in at most one, so that the tree all-reduce,
// which sends half of the data down each tree, gives every member about the same work. The one
// builder of it: searchTrees (GPUs, topology.hpp) takes its trees across hosts from binaryTree,
// the runtime's tree collectives take theirs over ranks from rankTree. Part of the layer's API:
// included by topology/topology.hpp.
#pragma once

#include <vector>

namespace tutti::topology {

struct TreeNode {
  int parent = -1;  // -1 at the root
  // binaryTree's in member order; rankTree's on one host in ring order, else the next rank of the
  // chain first, then other hosts' heads (so at most three).
  std::vector<int> children;
};

// Tree `tree` (0 or 1) over members 0..count-1, indexed by member. Tree 0 is NCCL's binary tree
// rooted at 0: member p's parent is p with its lowest set bit moved one place up (p = ..01[0] or
// ..11[0] -> ..10[0]), or, where that is past the end, cleared; so the odd members are the leaves
// and 0 has a single child. Tree 1 is tree 0 mirrored (p -> count-1-p) when count is even, which
// makes its leaves the even members; when count is odd it is tree 0 shifted by one (p -> p+1), so
// that only member 0 is interior in both (NCCL's one exception).
std::vector<TreeNode> binaryTree(int count, int tree);

// Tree `tree` over ranks, indexed by rank. `hosts` lists each host's ranks in ring order; together
// they hold each of 0..n-1 once (else kInvalidArgument). Across hosts it is binaryTree over the
// hosts in the given order; within a host the ranks form a chain along the ring whose head alone
// talks to the other hosts: the host's first rank leading the chain forward in tree 0, its last
// leading it backward in tree 1, so the two trees' halves move in opposite directions along the
// chain and two ranks, not one, carry each host's network traffic (NCCL gives each tree its own
// NIC). With one host the chain would cost n-1 steps of latency where a binary tree needs about
// log2(n), and measured slower (docs/topology.md, "In the runtime"): the ranks then are the
// members of binaryTree themselves, in ring order.
std::vector<TreeNode> rankTree(const std::vector<std::vector<int>>& hosts, int tree);

// The most links between a member and the root of `tree` (0 for one member or none): the steps a
// tree all-reduce takes up, and again down.
int treeDepth(const std::vector<TreeNode>& tree);

}  // namespace tutti::topology
