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

// Paths from `source` to each node of its host, by position in `members` (the host's node ids, in
// id order; `local` maps an id to its position). No path leaves a host: across hosts is NET.
std::vector<Path> pathsFrom(const Topology& topo, int source, const std::vector<int>& members,
                            const std::vector<int>& local) {
  const size_t n = members.size();
  std::vector<Label> labels(n);
  std::vector<bool> done(n, false);
  const int host = topo.node(source).host;
  const auto at = [&](int id) { return static_cast<size_t>(local[static_cast<size_t>(id)]); };
  labels[at(source)] = Label{PathType::kLoc, std::numeric_limits<double>::infinity(), 0, -1, true};
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
  queue.push({labels[at(source)], source});
  while (!queue.empty()) {
    const auto [label, u] = queue.top();
    queue.pop();
    const Label& here = labels[at(u)];
    if (done[at(u)] || better(here, label)) continue;
    done[at(u)] = true;
    for (int id : topo.linksFrom(u)) {
      const Link& link = topo.links()[id];
      if (topo.node(link.to).host != host) continue;
      bool transit = u != source;
      if (transit && !mayCross(topo, u, topo.links()[here.via], link, here.type)) continue;
      Label next{std::max(here.type, hopType(topo, link, transit)), std::min(here.bw, link.bw),
                 here.hops + 1, id, true};
      if (!done[at(link.to)] && better(next, labels[at(link.to)])) {
        labels[at(link.to)] = next;
        queue.push({next, link.to});
      }
    }
  }
  std::vector<Path> paths(n);
  for (size_t v = 0; v < n; ++v) {
    if (!labels[v].reached) continue;
    paths[v].type = labels[v].type;
    paths[v].bw = labels[v].bw;
    for (int hop = labels[v].via; hop >= 0; hop = labels[at(topo.links()[hop].from)].via)
      paths[v].links.push_back(hop);
    std::reverse(paths[v].links.begin(), paths[v].links.end());
  }
  return paths;
}

// NCCL's P2C: a GPU whose way to its CPU is C2C reaches the NICs nearest it that hang off that
// CPU (PHB from it) as P2C, not PHB: over its own chip-to-chip link, then one host bridge. Both
// directions, the NICs and their ports alike. `paths` are the host's, by position (`local`).
void applyP2c(const Topology& topo, int host, std::vector<std::vector<Path>>& paths,
              const std::vector<int>& local) {
  const auto at = [&](int id) { return static_cast<size_t>(local[static_cast<size_t>(id)]); };
  for (const int gpu : topo.nodesOf(NodeKind::kGpu, host)) {
    const std::vector<Path>& from = paths[at(gpu)];
    PathType nearest = PathType::kNet;
    for (const int nic : topo.nodesOf(NodeKind::kNic, host))
      nearest = std::min(nearest, from[at(nic)].type);
    for (const int cpu : topo.nodesOf(NodeKind::kCpu, host)) {
      if (from[at(cpu)].type != PathType::kC2c) continue;
      for (const int nic : topo.nodesOf(NodeKind::kNic, host)) {
        if (from[at(nic)].type != nearest || paths[at(nic)][at(cpu)].type != PathType::kPhb)
          continue;
        std::vector<int> ends{nic};
        for (const int port : topo.nodesOf(NodeKind::kNet, host))
          if (topo.node(port).parent == nic) ends.push_back(port);
        for (const int end : ends)
          for (auto [a, b] : {std::pair{gpu, end}, std::pair{end, gpu}}) {
            PathType& type = paths[at(a)][at(b)].type;
            type = std::min(type, PathType::kP2c);
          }
      }
    }
  }
}

// The widest way from a node into the network of its host (0 without network ports), given its
// paths within the host by position (`local`).
double networkBw(const Topology& topo, const std::vector<Path>& from, int host,
                 const std::vector<int>& local) {
  double best = 0;
  for (int net : topo.nodesOf(NodeKind::kNet, host)) {
    const Path& path = from[static_cast<size_t>(local[static_cast<size_t>(net)])];
    if (path.type <= PathType::kNet) best = std::max(best, path.bw);
  }
  return best;
}

}  // namespace

void Topology::computePaths() {
  hostNodes_.resize(hosts_.size());
  std::vector<std::vector<std::vector<Path>>> paths(hosts_.size());
  std::vector<double> toNetwork(nodes_.size(), 0);
  for (size_t host = 0; host < hosts_.size(); ++host) {
    const std::vector<int>& members = hostNodes_[host];
    std::vector<std::vector<Path>>& within = paths[host];
    for (int id : members) within.push_back(pathsFrom(*this, id, members, local_));
    applyP2c(*this, static_cast<int>(host), within, local_);
    for (size_t i = 0; i < members.size(); ++i)
      toNetwork[static_cast<size_t>(members[i])] =
          networkBw(*this, within[i], static_cast<int>(host), local_);
    for (size_t i = 0; i < members.size(); ++i) within[i][i].bw = 0;  // LOC: no transfer
  }
  // Across hosts: NET, at the narrower of the two ends' ways into the network. The distinct widths
  // are few; each node points at its own, and a pair at the lesser of its two.
  std::vector<double> widths = toNetwork;
  std::sort(widths.begin(), widths.end());
  widths.erase(std::unique(widths.begin(), widths.end()), widths.end());
  netPaths_.clear();
  for (double bw : widths) netPaths_.push_back(Path{PathType::kNet, bw, {}});
  netPath_.clear();
  for (double bw : toNetwork)
    netPath_.push_back(
        static_cast<int>(std::lower_bound(widths.begin(), widths.end(), bw) - widths.begin()));
  paths_ = std::move(paths);
}

}  // namespace tutti::topology
