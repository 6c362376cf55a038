// Double binary trees across hosts (NCCL's), with a chain inside each host: binaryTree
// (double_tree.hpp) over the hosts with GPUs, in order. Tree t uses NIC t on every host; inside,
// the GPUs follow the host's first ring cut open at the GPU closest to that NIC.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "topology/chains.hpp"
#include "topology/topology.hpp"

namespace tutti::topology {

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
    const std::vector<TreeNode> across = binaryTree(n, t);
    for (int p = 0; p < n; ++p) {
      int host = rails.hosts[p];
      for (int child : across[p].children) tree.hosts[host].children.push_back(rails.hosts[child]);
      if (across[p].parent >= 0) tree.hosts[host].parent = rails.hosts[across[p].parent];
      int endpoint = netEndpoint(topo, rails.nics[p][static_cast<size_t>(tree.rail)]);
      Cut cut = cutRing(topo, rings[p], endpoint);
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
