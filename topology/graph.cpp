// The graph: nodes, directed links and the names of their kinds.
#include <algorithm>

#include "base/error.hpp"
#include "topology/topology.hpp"

namespace tutti::topology {

const char* nodeKindName(NodeKind kind) {
  switch (kind) {
    case NodeKind::kCpu: return "CPU";
    case NodeKind::kPciSwitch: return "PCI";
    case NodeKind::kGpu: return "GPU";
    case NodeKind::kNvSwitch: return "NVS";
    case NodeKind::kNic: return "NIC";
    case NodeKind::kNet: return "NET";
  }
  return "?";
}

const char* linkKindName(LinkKind kind) {
  switch (kind) {
    case LinkKind::kNvLink: return "NVLink";
    case LinkKind::kPcie: return "PCIe";
    case LinkKind::kSmp: return "SMP";
    case LinkKind::kNet: return "NET";
    case LinkKind::kC2C: return "C2C";
  }
  return "?";
}

const char* pathTypeName(PathType type) {
  switch (type) {
    case PathType::kLoc: return "LOC";
    case PathType::kNvl: return "NVL";
    case PathType::kNvb: return "NVB";
    case PathType::kC2c: return "C2C";
    case PathType::kPix: return "PIX";
    case PathType::kPxb: return "PXB";
    case PathType::kP2c: return "P2C";
    case PathType::kPhb: return "PHB";
    case PathType::kSys: return "SYS";
    case PathType::kNet: return "NET";
  }
  return "?";
}

int Topology::addHost(std::string hash) {
  for (size_t i = 0; i < hosts_.size(); ++i)
    if (hosts_[i] == hash) return static_cast<int>(i);
  hosts_.push_back(std::move(hash));
  return static_cast<int>(hosts_.size() - 1);
}

int Topology::addNode(Node node) {
  if (node.host < 0 || node.host >= static_cast<int>(hosts_.size()))
    raise(ErrorCode::kInternal, "topology: node {} on unknown host {}", node.busId, node.host);
  hostNodes_.resize(hosts_.size());
  std::vector<int>& siblings = hostNodes_[static_cast<size_t>(node.host)];
  node.index = static_cast<int>(std::count_if(siblings.begin(), siblings.end(), [&](int id) {
    return nodes_[static_cast<size_t>(id)].kind == node.kind;
  }));
  const int id = static_cast<int>(nodes_.size());
  local_.push_back(static_cast<int>(siblings.size()));
  siblings.push_back(id);
  nodes_.push_back(std::move(node));
  out_.emplace_back();
  paths_.clear();
  return id;
}

int Topology::addDirectedLink(int from, int to, LinkKind kind, double bw, int count) {
  if (from < 0 || to < 0 || from >= static_cast<int>(nodes_.size()) ||
      to >= static_cast<int>(nodes_.size()) || from == to)
    raise(ErrorCode::kInternal, "topology: bad link {} -> {}", from, to);
  paths_.clear();
  for (int id : out_[from]) {
    Link& link = links_[id];
    if (link.to != to || link.kind != kind) continue;
    link.bw += bw;  // parallel links of one kind form one bundle
    link.count += count;
    return id;
  }
  links_.push_back(Link{from, to, kind, bw, count});
  int id = static_cast<int>(links_.size() - 1);
  out_[from].push_back(id);
  paths_.clear();
  return id;
}

void Topology::addLink(int a, int b, LinkKind kind, double bw, int count) {
  addDirectedLink(a, b, kind, bw, count);
  addDirectedLink(b, a, kind, bw, count);
}

std::vector<int> Topology::nodesOf(NodeKind kind, int host) const {
  std::vector<int> ids;
  if (host >= 0) {
    if (static_cast<size_t>(host) < hostNodes_.size())
      for (int id : hostNodes_[static_cast<size_t>(host)])
        if (nodes_[static_cast<size_t>(id)].kind == kind) ids.push_back(id);
    return ids;
  }
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].kind == kind) ids.push_back(static_cast<int>(i));
  return ids;
}

int Topology::findBusId(int host, std::string_view busId) const {
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].host == host && nodes_[i].busId == busId) return static_cast<int>(i);
  return -1;
}

const Path& Topology::path(int from, int to) const {
  if (paths_.empty()) raise(ErrorCode::kInvalidUsage, "topology: paths not computed");
  const int host = nodes_.at(static_cast<size_t>(from)).host;
  if (nodes_.at(static_cast<size_t>(to)).host != host)
    return netPaths_[static_cast<size_t>(
        std::min(netPath_[static_cast<size_t>(from)], netPath_[static_cast<size_t>(to)]))];
  return paths_[static_cast<size_t>(host)][static_cast<size_t>(local_[static_cast<size_t>(from)])]
               [static_cast<size_t>(local_[static_cast<size_t>(to)])];
}

}  // namespace tutti::topology
