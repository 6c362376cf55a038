// The double binary tree (topology/double_tree.hpp) over 1..17 hosts with 1..5 ranks each and with
// uneven hosts, ranks numbered out of host order. Its shape against a reference built another way
// (NCCL's tree 0 as the Cartesian tree of trailing zero bits: in any stretch of members the one
// with the most trailing zeros is the root of the others), and the properties NCCL's trees have:
// every rank once under one root, no cycle, each host interior in at most one tree (but host 0
// for odd counts), only a chain's head with edges to other hosts, at most three children.
#include <algorithm>
#include <random>

#include "helpers.hpp"
#include "tests/error_of.hpp"

namespace tutti::topology::test {
namespace {

int trailingZeros(int value) {
  int zeros = 0;
  while (!(value & 1)) {
    value >>= 1;
    ++zeros;
  }
  return zeros;
}

// Members lo+1..hi-1 hang below `parent`, the one with the most trailing zeros on top.
void cartesian(std::vector<int>& parents, int lo, int hi, int parent) {
  if (hi - lo < 2) return;
  int top = lo + 1;
  for (int p = lo + 1; p < hi; ++p)
    if (trailingZeros(p) > trailingZeros(top)) top = p;
  parents[static_cast<size_t>(top)] = parent;
  cartesian(parents, lo, top, top);
  cartesian(parents, top, hi, top);
}

// Reference parents of tree `tree` over `count` members.
std::vector<int> referenceParents(int count, int tree) {
  std::vector<int> first(static_cast<size_t>(count), -1);
  cartesian(first, 0, count, 0);
  if (tree == 0) return first;
  // Tree 1 is tree 0 with member p standing at place(p): mirrored (even count) or shifted.
  auto place = [count](int p) { return count % 2 == 0 ? count - 1 - p : (p + 1) % count; };
  std::vector<int> second(static_cast<size_t>(count), -1);
  for (int p = 0; p < count; ++p) {
    const int up = first[static_cast<size_t>(p)];
    second[static_cast<size_t>(place(p))] = up < 0 ? -1 : place(up);
  }
  return second;
}

int ceilLog2(int n) {
  int log = 0;
  while ((1 << log) < n) ++log;
  return log;
}

// `sizes[h]` ranks on host h, numbered in a fixed shuffled order (not host by host).
std::vector<std::vector<int>> hostsOf(const std::vector<int>& sizes) {
  int n = 0;
  for (int size : sizes) n += size;
  std::vector<int> numbers(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) numbers[static_cast<size_t>(i)] = i;
  std::shuffle(numbers.begin(), numbers.end(), std::mt19937(static_cast<unsigned>(n)));
  std::vector<std::vector<int>> hosts;
  size_t next = 0;
  for (int size : sizes) {
    hosts.emplace_back(numbers.begin() + static_cast<long>(next),
                       numbers.begin() + static_cast<long>(next + static_cast<size_t>(size)));
    next += static_cast<size_t>(size);
  }
  return hosts;
}

// Every rank once under one root, links both ways, no cycle; returns the depth.
int checkShape(const std::vector<TreeNode>& nodes) {
  const size_t n = nodes.size();
  int root = -1;
  size_t links = 0;
  for (size_t rank = 0; rank < n; ++rank) {
    INFO("rank " << rank);
    const TreeNode& node = nodes[rank];
    if (node.parent < 0) {
      REQUIRE(root == -1);
      root = static_cast<int>(rank);
    } else {
      REQUIRE(static_cast<size_t>(node.parent) < n);
      const std::vector<int>& siblings = nodes[static_cast<size_t>(node.parent)].children;
      REQUIRE(std::count(siblings.begin(), siblings.end(), static_cast<int>(rank)) == 1);
    }
    CHECK(node.children.size() <= 3);
    for (int child : node.children) {
      REQUIRE(child >= 0);
      REQUIRE(static_cast<size_t>(child) < n);
      REQUIRE(nodes[static_cast<size_t>(child)].parent == static_cast<int>(rank));
    }
    links += node.children.size();
  }
  REQUIRE(root >= 0);
  REQUIRE(links == n - 1);
  std::vector<int> seen(n, 0);
  std::vector<int> level{root};
  int depth = -1;
  while (!level.empty()) {
    ++depth;
    std::vector<int> below;
    for (int rank : level) {
      REQUIRE(++seen[static_cast<size_t>(rank)] == 1);
      for (int child : nodes[static_cast<size_t>(rank)].children) below.push_back(child);
    }
    level = std::move(below);
  }
  REQUIRE(std::count(seen.begin(), seen.end(), 1) == static_cast<long>(n));
  return depth;
}

void checkRankTrees(const std::vector<std::vector<int>>& hosts) {
  const int hostCount = static_cast<int>(hosts.size());
  size_t n = 0, longest = 0;
  std::vector<int> hostOf;
  for (const std::vector<int>& ranks : hosts) {
    n += ranks.size();
    longest = std::max(longest, ranks.size());
  }
  hostOf.resize(n);
  for (int h = 0; h < hostCount; ++h)
    for (int rank : hosts[static_cast<size_t>(h)]) hostOf[static_cast<size_t>(rank)] = h;
  // With one host its ranks are the members; else the hosts are, each under its chain's head.
  const int members = hostCount == 1 ? static_cast<int>(n) : hostCount;
  std::vector<int> interior(static_cast<size_t>(members), 0);
  for (int tree = 0; tree < 2; ++tree) {
    INFO("tree " << tree);
    const std::vector<TreeNode> nodes = rankTree(hosts, tree);
    REQUIRE(nodes.size() == n);
    const int depth = checkShape(nodes);
    const std::vector<int> expected = referenceParents(members, tree);
    if (hostCount == 1) {
      CHECK(depth <= ceilLog2(static_cast<int>(n)));
      const std::vector<int>& ring = hosts[0];
      for (size_t p = 0; p < n; ++p) {
        const TreeNode& node = nodes[static_cast<size_t>(ring[p])];
        const int up = expected[p];
        CHECK(node.parent == (up < 0 ? -1 : ring[static_cast<size_t>(up)]));
        if (!node.children.empty()) ++interior[p];
      }
      continue;
    }
    CHECK(depth <= ceilLog2(hostCount) + static_cast<int>(longest) - 1);
    for (int h = 0; h < hostCount; ++h) {
      INFO("host " << h);
      const std::vector<int>& ranks = hosts[static_cast<size_t>(h)];
      const int head = tree == 0 ? ranks.front() : ranks.back();
      bool hasHostChildren = false;
      for (int rank : ranks) {
        INFO("rank " << rank);
        const TreeNode& node = nodes[static_cast<size_t>(rank)];
        std::vector<int> neighbours = node.children;
        if (node.parent >= 0) neighbours.push_back(node.parent);
        for (int other : neighbours) {
          if (hostOf[static_cast<size_t>(other)] == h) continue;
          CHECK(rank == head);  // only the head talks to other hosts
          if (other != node.parent) hasHostChildren = true;
        }
      }
      // The head hangs under its parent host's head; the others follow the ring (tree 0) or run
      // against it (tree 1).
      const int upHost = expected[static_cast<size_t>(h)];
      const std::vector<int>& above = hosts[static_cast<size_t>(std::max(upHost, 0))];
      CHECK(nodes[static_cast<size_t>(head)].parent ==
            (upHost < 0 ? -1 : (tree == 0 ? above.front() : above.back())));
      for (size_t i = 1; i < ranks.size(); ++i) {
        if (tree == 0)
          CHECK(nodes[static_cast<size_t>(ranks[i])].parent == ranks[i - 1]);
        else
          CHECK(nodes[static_cast<size_t>(ranks[i - 1])].parent == ranks[i]);
      }
      if (hasHostChildren) ++interior[static_cast<size_t>(h)];
    }
  }
  // Interior in both trees: nobody, but member 0 when the count is odd (NCCL's shifted tree).
  for (int m = 0; m < members; ++m) {
    INFO("member " << m << " of " << members);
    if (m == 0 && members % 2 == 1 && members > 1)
      CHECK(interior[0] == 2);
    else
      CHECK(interior[static_cast<size_t>(m)] <= 1);
  }
}

}  // namespace

TEST_CASE("binaryTree is NCCL's double binary tree") {
  for (int count = 1; count <= 64; ++count)
    for (int tree = 0; tree < 2; ++tree) {
      INFO(count << " members, tree " << tree);
      const std::vector<TreeNode> nodes = binaryTree(count, tree);
      checkShape(nodes);
      const std::vector<int> expected = referenceParents(count, tree);
      for (int p = 0; p < count; ++p) CHECK(nodes[static_cast<size_t>(p)].parent == expected[p]);
      // Tree 0's leaves are the odd members (NCCL's picture in src/graph/trees.cc).
      if (tree == 0)
        for (int p = 1; p < count; p += 2) CHECK(nodes[static_cast<size_t>(p)].children.empty());
    }
}

TEST_CASE("rankTree over 1..17 hosts of 1..5 ranks, even and uneven") {
  for (int hostCount = 1; hostCount <= 17; ++hostCount) {
    for (int perHost = 1; perHost <= 5; ++perHost) {
      INFO(hostCount << " hosts of " << perHost << " ranks");
      checkRankTrees(hostsOf(std::vector<int>(static_cast<size_t>(hostCount), perHost)));
    }
    std::vector<int> uneven;
    for (int h = 0; h < hostCount; ++h) uneven.push_back(1 + (h * 3 + hostCount) % 5);
    INFO(hostCount << " uneven hosts");
    checkRankTrees(hostsOf(uneven));
  }
}

TEST_CASE("rankTree refuses hosts that do not hold each rank once") {
  using tutti::tests::messageOf;
  CHECK_THAT(messageOf(ErrorCode::kInvalidArgument,
                       [] {
                         rankTree({{0, 1}, {1, 2}}, 0);
                       }),
             Catch::Contains("rank 1"));
  CHECK_THAT(messageOf(ErrorCode::kInvalidArgument,
                       [] {
                         rankTree({{0, 3}, {1}}, 0);
                       }),
             Catch::Contains("rank 3"));
  CHECK_THAT(messageOf(ErrorCode::kInvalidArgument,
                       [] {
                         rankTree({{0}, {}}, 1);
                       }),
             Catch::Contains("without ranks"));
}

}  // namespace tutti::topology::test

namespace tutti::topology::test {

// treeDepth against parent hops counted from every member: across hosts of equal size the
// deepest rank ends the chain under the deepest host's head (the hosts' tree depth plus the
// chain's perHost-1 links); on one host the binary tree's own depth, ceil(log2(ranks)) at most.
TEST_CASE("treeDepth is the most parent hops from a member to the root") {
  auto hops = [](const std::vector<TreeNode>& tree) {
    int most = 0;
    for (size_t p = 0; p < tree.size(); ++p) {
      int count = 0;
      for (int at = static_cast<int>(p); tree[static_cast<size_t>(at)].parent >= 0;
           at = tree[static_cast<size_t>(at)].parent)
        ++count;
      most = std::max(most, count);
    }
    return most;
  };
  CHECK(treeDepth({}) == 0);
  for (int hostCount = 1; hostCount <= 17; ++hostCount)
    for (int perHost = 1; perHost <= 5; ++perHost)
      for (int tree = 0; tree < 2; ++tree) {
        INFO(hostCount << " hosts of " << perHost << " ranks, tree " << tree);
        const auto hosts = hostsOf(std::vector<int>(static_cast<size_t>(hostCount), perHost));
        const std::vector<TreeNode> ranks = rankTree(hosts, tree);
        CHECK(treeDepth(ranks) == hops(ranks));
        const std::vector<TreeNode> across = binaryTree(hostCount, tree);
        CHECK(treeDepth(across) == hops(across));
        CHECK(treeDepth(across) <= ceilLog2(hostCount));
        if (hostCount > 1) CHECK(treeDepth(ranks) == hops(across) + perHost - 1);
      }
}

}  // namespace tutti::topology::test
