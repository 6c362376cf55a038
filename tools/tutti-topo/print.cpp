#include "print.hpp"

#include <fmt/format.h>

#include <cmath>
#include <map>

namespace tutti::tools {
namespace {

using topology::Link;
using topology::LinkKind;
using topology::Node;
using topology::NodeKind;
using topology::Topology;

double rounded(double bw) {
  return std::round(bw * 10) / 10;
}

std::string describe(const Topology& topo, int id) {
  const Node& node = topo.node(id);
  std::string out = fmt::format("{} ", topology::nodeKindName(node.kind));
  switch (node.kind) {
    case NodeKind::kCpu:
      out += fmt::format(
          "{} {} {} family {} model {}", node.busId, node.arch.empty() ? "?" : node.arch,
          node.vendor.empty() ? "(no vendor)" : node.vendor, node.family, node.model);
      break;
    case NodeKind::kGpu:
      out += fmt::format("{} {} sm {}", node.index, node.busId,
                         node.sm ? std::to_string(node.sm) : "?");
      break;
    case NodeKind::kNic: out += fmt::format("{} {}", node.index, node.busId); break;
    case NodeKind::kNet:
      out += fmt::format("{} port {}", node.busId, node.port);
      if (!node.guid.empty()) out += " guid " + node.guid;
      break;
    case NodeKind::kNvSwitch:
      return out + fmt::format("{} ({} GPUs)", node.busId, topo.linksFrom(id).size());
    default: out += node.busId;
  }
  for (int id2 : topo.linksFrom(id)) {
    const Link& link = topo.links()[id2];
    if (link.to == node.parent)
      out += fmt::format("  [{} {:g} GB/s]", topology::linkKindName(link.kind), rounded(link.bw));
    else if (link.kind == LinkKind::kNvLink || link.kind == LinkKind::kC2C ||
             link.kind == LinkKind::kSmp)
      out += fmt::format("  {} x{} to {} {:g} GB/s", topology::linkKindName(link.kind), link.count,
                         topo.node(link.to).busId, rounded(link.bw));
  }
  if (!node.inferred.empty()) out += fmt::format("  ({})", node.inferred);
  return out;
}

void appendSubtree(const Topology& topo, const std::multimap<int, int>& children, int id, int depth,
                   std::string& out) {
  out += fmt::format("{:{}}{}\n", "", 2 * depth, describe(topo, id));
  auto [begin, end] = children.equal_range(id);
  for (auto it = begin; it != end; ++it) appendSubtree(topo, children, it->second, depth + 1, out);
}

std::string cell(const Topology& topo, int a, int b) {
  if (a == b) return "X";
  const topology::Path& path = topo.path(a, b);
  return fmt::format("{} {:g}", topology::pathTypeName(path.type), rounded(path.bw));
}

}  // namespace

std::string formatTree(const Topology& topo) {
  std::multimap<int, int> children;
  for (size_t id = 0; id < topo.nodes().size(); ++id)
    children.emplace(topo.node(static_cast<int>(id)).parent, static_cast<int>(id));
  std::string out;
  for (size_t host = 0; host < topo.hosts().size(); ++host) {
    out += fmt::format("host {}{}\n", host,
                       topo.hosts()[host].empty() ? "" : " (host_hash " + topo.hosts()[host] + ")");
    auto [begin, end] = children.equal_range(-1);
    for (auto it = begin; it != end; ++it)
      if (topo.node(it->second).host == static_cast<int>(host))
        appendSubtree(topo, children, it->second, 1, out);
  }
  for (const std::string& note : topo.notes) out += fmt::format("note: {}\n", note);
  return out;
}

std::string formatMatrix(const Topology& topo) {
  std::string out;
  for (int host = 0; host < static_cast<int>(topo.hosts().size()); ++host) {
    std::vector<int> gpus = topo.nodesOf(NodeKind::kGpu, host);
    if (gpus.empty()) {
      out += fmt::format("host {}: no GPUs\n", host);
      continue;
    }
    std::vector<int> columns = gpus;
    for (int nic : topo.nodesOf(NodeKind::kNic, host)) columns.push_back(nic);
    out += fmt::format("host {} (GB/s)\n{:8}", host, "");
    for (int column : columns)
      out +=
          fmt::format("{:>11}", fmt::format("{}{}", topology::nodeKindName(topo.node(column).kind),
                                            topo.node(column).index));
    out += "\n";
    for (int row : gpus) {
      out += fmt::format("{:8}", fmt::format("GPU{}", topo.node(row).index));
      for (int column : columns) out += fmt::format("{:>11}", cell(topo, row, column));
      out += "\n";
    }
  }
  out +=
      "\nLegend: LOC itself, NVL NVLink (direct or NVSwitch), NVB NVLink through one GPU,\n"
      "C2C a GPU's chip-to-chip link to its CPU, PIX one PCIe switch, PXB several PCIe\n"
      "switches, P2C C2C then the CPU's host bridge to a NIC, PHB through a CPU's host bridge,\n"
      "SYS across the CPU interconnect, NET another host. Figures: bottleneck GB/s.\n";
  return out;
}

std::string formatRings(const Topology& topo) {
  std::string out;
  auto append = [&](const std::string& title, const topology::RingPlan& plan) {
    out += fmt::format("{}: {} channels, {:g} GB/s in total\n", title, plan.channels.size(),
                       rounded(plan.totalBw));
    for (size_t i = 0; i < plan.channels.size(); ++i)
      out += "  " + topology::formatChannel(topo, static_cast<int>(i), plan.channels[i]) + "\n";
  };
  for (int host = 0; host < static_cast<int>(topo.hosts().size()); ++host)
    append(fmt::format("host {}", host), topology::searchRings(topo, host));
  if (topo.hosts().size() > 1)
    append(fmt::format("across {} hosts", topo.hosts().size()), topology::searchNetRings(topo));
  return out;
}

std::string formatTrees(const Topology& topo) {
  topology::TreePlan plan = topology::searchTrees(topo);
  if (plan.trees.empty()) return "no trees: a host with GPUs has no NIC\n";
  std::string out;
  for (size_t i = 0; i < plan.trees.size(); ++i)
    out += topology::formatTreeChannel(topo, static_cast<int>(i), plan.trees[i]);
  return out;
}

}  // namespace tutti::tools
