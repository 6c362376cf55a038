#include "json.hpp"

#include <nlohmann/json.hpp>

namespace tutti::tools {

using nlohmann::json;
using topology::NodeKind;

namespace {

json nodeJson(const topology::Node& node, int id) {
  json out = {{"id", id},
              {"kind", topology::nodeKindName(node.kind)},
              {"busId", node.busId},
              {"host", node.host},
              {"parent", node.parent},
              {"index", node.index}};
  if (node.kind == NodeKind::kCpu)
    out.update({{"numaId", node.numaId},
                {"arch", node.arch},
                {"vendor", node.vendor},
                {"family", node.family},
                {"model", node.model}});
  if (node.pciWidth > 0)
    out.update({{"pciClass", node.pciClass}, {"pciGts", node.pciGts}, {"pciWidth", node.pciWidth}});
  if (node.kind == NodeKind::kGpu)
    out.update({{"sm", node.sm}, {"dev", node.dev}, {"rank", node.rank}});
  if (node.kind == NodeKind::kNet) out.update({{"guid", node.guid}, {"port", node.port}});
  if (!node.inferred.empty()) out["inferred"] = node.inferred;
  return out;
}

json ringsJson(const topology::Topology& topo, int host) {
  topology::RingPlan plan = topology::searchRings(topo, host);
  json channels = json::array();
  for (const topology::Channel& channel : plan.channels) {
    json ring = json::array();
    for (int gpu : channel.ring) ring.push_back(topo.node(gpu).index);
    channels.push_back(
        {{"gpus", ring}, {"type", topology::pathTypeName(channel.type)}, {"bw", channel.bw}});
  }
  return {{"host", host}, {"channels", channels}, {"totalBw", plan.totalBw}};
}

}  // namespace

std::string toJson(const topology::Topology& topo) {
  json out = {{"hosts", topo.hosts()}, {"notes", topo.notes}};
  json& nodes = out["nodes"] = json::array();
  for (size_t id = 0; id < topo.nodes().size(); ++id)
    nodes.push_back(nodeJson(topo.nodes()[id], static_cast<int>(id)));
  json& links = out["links"] = json::array();
  for (const topology::Link& link : topo.links())
    links.push_back({{"from", link.from},
                     {"to", link.to},
                     {"kind", topology::linkKindName(link.kind)},
                     {"bw", link.bw},
                     {"count", link.count}});
  json& rings = out["rings"] = json::array();
  for (int host = 0; host < static_cast<int>(topo.hosts().size()); ++host)
    rings.push_back(ringsJson(topo, host));
  return out.dump(2) + "\n";
}

}  // namespace tutti::tools
