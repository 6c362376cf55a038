// Double binary trees across hosts (NCCL's, src/graph/trees.cc), with a chain inside each host.
//
// Tree 0 is a binary tree over the hosts with GPUs, in order: position p's lowest set bit b gives
// its parent (p ^ b) | 2b (or p ^ b when that is past the end) and children p - b/2 and the
// largest p + b/2^k in range; position 0 is the root with one child. Its interior positions are
// the even ones, so tree 1, its mirror (p -> n-1-p) for an even count, has only odd ones inside:
// no host is interior in both. For an odd count tree 1 is tree 0 shifted by one (as NCCL does),
// which keeps that true for every host but one. Tree t uses NIC t on every host; inside, the GPUs
// follow the host's first ring cut open at the GPU closest to that NIC.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "topology/chains.hpp"
#include "topology/topology.hpp"

namespace tutti::topology {
namespace {

int binaryParent(int n, int p) {
  if (p == 0) return -1;
  int bit = 1;
  while (!(p & bit)) bit <<= 1;
  int up = (p ^ bit) | (bit << 1);
  return up < n ? up : p ^ bit;
}

// Parent position of every position in tree `t` of n.
std::vector<int> parents(int n, int t) {
  std::vector<int> up(static_cast<size_t>(n));
  for (int p = 0; p < n; ++p) {
    if (t == 0) {
      up[p] = binaryParent(n, p);
    } else if (n % 2 == 0) {
      int q = binaryParent(n, n - 1 - p);
      up[p] = q < 0 ? -1 : n - 1 - q;
    } else {
      int q = binaryParent(n, (p + n - 1) % n);
      up[p] = q < 0 ? -1 : (q + 1) % n;
    }
  }
  return up;
}

}  // namespace

TreePlan searchTrees(const Topology& topo, const RingSearchOptions& options) {
  Rails rails = findRails(topo);
  TreePlan plan;
  if (rails.hosts.empty() || rails.count == 0) return plan;
  int n = static_cast<int>(rails.hosts.size());
  std::vector<std::vector<int>> rings;
  for (int host : rails.hosts) {
    RingPlan inHost = searchRings(topo, host, options);
    if (inHost.channels.empty()) return plan;
    rings.push_back(std::move(inHost.channels[0].ring));
  }
  for (int t = 0; t < 2; ++t) {
    Tree tree;
    tree.rail = t % rails.count;
    tree.hosts.resize(topo.hosts().size());
    tree.chains.resize(topo.hosts().size());
    tree.bw = INFINITY;
    std::vector<int> up = parents(n, t);
    for (int p = 0; p < n; ++p) {
      int host = rails.hosts[p];
      tree.hosts[host].parent = up[p] < 0 ? -1 : rails.hosts[up[p]];
      if (up[p] >= 0) tree.hosts[rails.hosts[up[p]]].children.push_back(host);
      int endpoint = netEndpoint(topo, rails.nics[p][static_cast<size_t>(tree.rail)]);
      Cut cut = cutRing(topo, rings[p], endpoint, false);
      tree.bw = std::min({tree.bw, cut.bw, topo.path(cut.chain.front(), endpoint).bw});
      for (size_t i = 0; i + 1 < cut.chain.size(); ++i)
        tree.bw = std::min(tree.bw, topo.path(cut.chain[i], cut.chain[i + 1]).bw);
      tree.chains[host] = std::move(cut.chain);
    }
    plan.trees.push_back(std::move(tree));
  }
  return plan;
}

std::string formatTreeChannel(const Topology& topo, int number, const Tree& tree) {
  std::string out = fmt::format("tree {} (NIC {}, {:g} GB/s):\n", number, tree.rail,
                                std::round(tree.bw * 10) / 10);
  for (size_t host = 0; host < tree.hosts.size(); ++host) {
    if (tree.chains[host].empty()) continue;
    out += fmt::format("  host {}: up {} down", host, tree.hosts[host].parent);
    for (int child : tree.hosts[host].children) out += fmt::format(" {}", child);
    if (tree.hosts[host].children.empty()) out += " -";
    out += " chain";
    for (int gpu : tree.chains[host]) out += fmt::format(" {}", topo.node(gpu).index);
    out += "\n";
  }
  return out;
}

}  // namespace tutti::topology
