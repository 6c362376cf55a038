// The graph as JSON, for scripts: hosts, notes, nodes, links, hardware threads and each host's
// ring channels (TUTTI_TOPO_DUMP_FILE=x.json, tutti-topo --json). json_import.cpp reads it back:
// every field of a node that some source sets is written.
#include <nlohmann/json.hpp>

#include "topology/topology.hpp"

namespace tutti::topology {

using nlohmann::json;

namespace {

json nodeJson(const Node& node, int id) {
  json out = {{"id", id},          {"kind", nodeKindName(node.kind)}, {"busId", node.busId},
              {"host", node.host}, {"parent", node.parent},           {"index", node.index}};
  if (node.kind == NodeKind::kCpu)
    out.update({{"numaId", node.numaId},
                {"arch", node.arch},
                {"package", node.package},
                {"vendor", node.vendor},
                {"family", node.family},
                {"model", node.model}});
  if (node.pciWidth > 0)
    out.update({{"pciClass", node.pciClass}, {"pciGts", node.pciGts}, {"pciWidth", node.pciWidth}});
  if (node.kind == NodeKind::kGpu)
    out.update({{"sm", node.sm}, {"dev", node.dev}, {"rank", node.rank}});
  if (node.kind == NodeKind::kNet)
    out.update({{"name", node.name},
                {"dev", node.dev},
                {"guid", node.guid},
                {"port", node.port},
                {"linkLayer", node.linkLayer}});
  if (!node.inferred.empty()) out["inferred"] = node.inferred;
  return out;
}

json ringsJson(const Topology& topo, int host) {
  RingPlan plan = searchRings(topo, host);
  json channels = json::array();
  for (const Channel& channel : plan.channels) {
    json ring = json::array();
    for (int gpu : channel.ring) ring.push_back(topo.node(gpu).index);
    channels.push_back({{"gpus", ring}, {"type", pathTypeName(channel.type)}, {"bw", channel.bw}});
  }
  return {{"host", host}, {"channels", channels}, {"totalBw", plan.totalBw}};
}

}  // namespace

std::string toJson(const Topology& topo) {
  json out = {{"hosts", topo.hosts()}, {"notes", topo.notes}};
  json& nodes = out["nodes"] = json::array();
  for (size_t id = 0; id < topo.nodes().size(); ++id)
    nodes.push_back(nodeJson(topo.nodes()[id], static_cast<int>(id)));
  json& links = out["links"] = json::array();
  for (const Link& link : topo.links())
    links.push_back({{"from", link.from},
                     {"to", link.to},
                     {"kind", linkKindName(link.kind)},
                     {"bw", link.bw},
                     {"count", link.count}});
  json& pus = out["pus"] = json::array();
  for (const Pu& pu : topo.pus)
    pus.push_back({{"os", pu.os}, {"core", pu.core}, {"package", pu.package}, {"cpu", pu.cpu}});
  json& rings = out["rings"] = json::array();
  for (int host = 0; host < static_cast<int>(topo.hosts().size()); ++host)
    rings.push_back(ringsJson(topo, host));
  return out.dump(2) + "\n";
}

}  // namespace tutti::topology
