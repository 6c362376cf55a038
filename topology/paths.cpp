// Best paths between every two nodes of a host, and across hosts through the network.
//
// A path's type is the farthest of its hops' types and its bandwidth the narrowest link. Paths
// are compared by type first (closest wins), then bandwidth, then hop count, and found with a
// Dijkstra search from every node. Transit rules, as in NCCL: a NIC is crossed only to or from
// its own network ports, a network port never; a GPU only from NVLink to NVLink, and at most one
// GPU per path (NVB).
#include <algorithm>
#include <limits>
#include <queue>

#include "topology/topology.hpp"

namespace tutti::topology {
namespace {

struct Label {
  PathType type = PathType::kNet;
  double bw = 0;
  int hops = std::numeric_limits<int>::max();
  int via = -1;  // link that reached the node
  bool reached = false;
};

bool better(const Label& a, const Label& b) {
  if (!b.reached) return a.reached;
  if (!a.reached) return false;
  if (a.type != b.type) return a.type < b.type;
  if (a.bw != b.bw) return a.bw > b.bw;
  return a.hops < b.hops;
}

PathType hopType(const Topology& topo, const Link& link, bool transit) {
  NodeKind from = topo.node(link.from).kind, to = topo.node(link.to).kind;
  switch (link.kind) {
    case LinkKind::kNvLink:
      return transit && from == NodeKind::kGpu ? PathType::kNvb : PathType::kNvl;
    case LinkKind::kPcie:
      if (from == NodeKind::kCpu || to == NodeKind::kCpu) return PathType::kPhb;
      if (from == NodeKind::kPciSwitch && to == NodeKind::kPciSwitch) return PathType::kPxb;
      return PathType::kPix;
    case LinkKind::kC2C: return PathType::kC2c;
    case LinkKind::kSmp: return PathType::kSys;
    case LinkKind::kNet: return PathType::kLoc;  // a NIC to its own port adds no distance
  }
  return PathType::kNet;
}

// `reached` is the best label at the node, arrived at through link `in`.
bool mayCross(const Topology& topo, int node, const Link& in, const Link& out, PathType reached) {
  switch (topo.node(node).kind) {
    case NodeKind::kNic: return in.kind == LinkKind::kNet || out.kind == LinkKind::kNet;
    case NodeKind::kNet: return false;
    case NodeKind::kGpu:
      return reached == PathType::kNvl && in.kind == LinkKind::kNvLink &&
             out.kind == LinkKind::kNvLink;
    default: return true;
  }
}

std::vector<Path> pathsFrom(const Topology& topo, int source) {
  size_t n = topo.nodes().size();
  std::vector<Label> labels(n);
  std::vector<bool> done(n, false);
  labels[source] = Label{PathType::kLoc, std::numeric_limits<double>::infinity(), 0, -1, true};
  // Reached nodes, best label first and the lowest id among equals (the order a scan of every
  // node would take): a heap keeps each search O(m log n) where the scan made all of them O(n^3),
  // seconds for a file of a thousand nodes. An entry whose node was since reached better is stale.
  using Entry = std::pair<Label, int>;
  const auto after = [](const Entry& a, const Entry& b) {
    if (better(b.first, a.first)) return true;
    if (better(a.first, b.first)) return false;
    return a.second > b.second;
  };
  std::priority_queue<Entry, std::vector<Entry>, decltype(after)> queue(after);
  queue.push({labels[source], source});
  while (!queue.empty()) {
    const auto [label, u] = queue.top();
    queue.pop();
    if (done[u] || better(labels[u], label)) continue;
    done[u] = true;
    for (int id : topo.linksFrom(u)) {
      const Link& link = topo.links()[id];
      bool transit = u != source;
      if (transit && !mayCross(topo, u, topo.links()[labels[u].via], link, labels[u].type))
        continue;
      Label next{std::max(labels[u].type, hopType(topo, link, transit)),
                 std::min(labels[u].bw, link.bw), labels[u].hops + 1, id, true};
      if (!done[link.to] && better(next, labels[link.to])) {
        labels[link.to] = next;
        queue.push({next, link.to});
      }
    }
  }
  std::vector<Path> paths(n);
  for (size_t v = 0; v < n; ++v) {
    if (!labels[v].reached) continue;
    paths[v].type = labels[v].type;
    paths[v].bw = labels[v].bw;
    for (int at = static_cast<int>(v); labels[at].via >= 0; at = topo.links()[labels[at].via].from)
      paths[v].links.push_back(labels[at].via);
    std::reverse(paths[v].links.begin(), paths[v].links.end());
  }
  return paths;
}

// NCCL's P2C: a GPU whose way to its CPU is C2C reaches the NICs nearest it that hang off that
// CPU (PHB from it) as P2C, not PHB: over its own chip-to-chip link, then one host bridge. Both
// directions, the NICs and their ports alike.
void applyP2c(const Topology& topo, std::vector<std::vector<Path>>& paths) {
  for (const int gpu : topo.nodesOf(NodeKind::kGpu)) {
    const int host = topo.node(gpu).host;
    const std::vector<Path>& from = paths[static_cast<size_t>(gpu)];
    PathType nearest = PathType::kNet;
    for (const int nic : topo.nodesOf(NodeKind::kNic, host))
      nearest = std::min(nearest, from[static_cast<size_t>(nic)].type);
    for (const int cpu : topo.nodesOf(NodeKind::kCpu, host)) {
      if (from[static_cast<size_t>(cpu)].type != PathType::kC2c) continue;
      for (const int nic : topo.nodesOf(NodeKind::kNic, host)) {
        if (from[static_cast<size_t>(nic)].type != nearest ||
            paths[static_cast<size_t>(nic)][static_cast<size_t>(cpu)].type != PathType::kPhb)
          continue;
        std::vector<int> ends{nic};
        for (const int port : topo.nodesOf(NodeKind::kNet, host))
          if (topo.node(port).parent == nic) ends.push_back(port);
        for (const int end : ends)
          for (auto [a, b] : {std::pair{gpu, end}, std::pair{end, gpu}}) {
            PathType& type = paths[static_cast<size_t>(a)][static_cast<size_t>(b)].type;
            type = std::min(type, PathType::kP2c);
          }
      }
    }
  }
}

// The widest way from a node into the network of its host (0 without network ports).
double networkBw(const Topology& topo, const std::vector<Path>& from, int host) {
  double best = 0;
  for (int net : topo.nodesOf(NodeKind::kNet, host))
    if (from[net].type <= PathType::kNet) best = std::max(best, from[net].bw);
  return best;
}

}  // namespace

void Topology::computePaths() {
  std::vector<std::vector<Path>> paths;
  for (size_t i = 0; i < nodes_.size(); ++i) paths.push_back(pathsFrom(*this, static_cast<int>(i)));
  applyP2c(*this, paths);
  std::vector<double> toNetwork;
  for (size_t a = 0; a < nodes_.size(); ++a)
    toNetwork.push_back(networkBw(*this, paths[a], nodes_[a].host));
  for (size_t a = 0; a < nodes_.size(); ++a) {
    paths[a][a].bw = 0;  // LOC: no transfer
    for (size_t b = 0; b < nodes_.size(); ++b) {
      if (nodes_[a].host == nodes_[b].host) continue;
      paths[a][b].type = PathType::kNet;
      paths[a][b].bw = std::min(toNetwork[a], toNetwork[b]);
    }
  }
  paths_ = std::move(paths);
}

}  // namespace tutti::topology
