// Export to NCCL's topology XML, the format the importer reads: what tutti found (or was given)
// can be written with TUTTI_TOPO_DUMP_FILE and read back by tutti or by NCCL (NCCL_TOPO_FILE).
// Values the importer inferred are written explicitly. NVLinks to the one NVSwitch node of a
// host are written as one <nvlink> with the NVSwitch class.
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <map>
#include <pugixml.hpp>
#include <sstream>
#include <utility>

#include "base/error.hpp"
#include "topology/topology.hpp"

namespace tutti::topology {
namespace {

constexpr uint32_t kGpuClass = 0x030200, kNicClass = 0x020000, kBridgeClass = 0x060400,
                   kNvSwitchClass = 0x068000;

class Exporter {
 public:
  explicit Exporter(const Topology& topo) : topo_(topo) {
    for (size_t id = 0; id < topo.nodes().size(); ++id)
      children_.emplace(topo.node(static_cast<int>(id)).parent, static_cast<int>(id));
  }

  void write(pugi::xml_document& doc) {
    pugi::xml_node system = doc.append_child("system");
    system.append_attribute("version") = 1;
    for (int cpu : topo_.nodesOf(NodeKind::kCpu)) writeCpu(system, cpu);
  }

 private:
  static void set(pugi::xml_node element, const char* name, const std::string& value) {
    element.append_attribute(name) = value.c_str();
  }

  std::vector<int> childrenOf(int id) const {
    std::vector<int> ids;
    auto [begin, end] = children_.equal_range(id);
    for (auto it = begin; it != end; ++it) ids.push_back(it->second);
    return ids;
  }

  void writeCpu(pugi::xml_node system, int id) {
    const Node& cpu = topo_.node(id);
    pugi::xml_node element = system.append_child("cpu");
    if (!topo_.hosts()[cpu.host].empty()) set(element, "host_hash", topo_.hosts()[cpu.host]);
    set(element, "numaid", std::to_string(cpu.numaId));
    if (!cpu.arch.empty()) set(element, "arch", cpu.arch);
    if (!cpu.vendor.empty()) set(element, "vendor", cpu.vendor);
    if (cpu.family >= 0) set(element, "familyid", std::to_string(cpu.family));
    if (cpu.model >= 0) set(element, "modelid", std::to_string(cpu.model));
    for (int child : childrenOf(id)) {
      if (topo_.node(child).pciWidth == 0)
        writeNets(element.append_child("nic"), child);  // a NIC without a PCI device
      else
        writePci(element, child);
    }
  }

  uint32_t pciClass(const Node& node) const {
    if (node.pciClass != 0) return node.pciClass;
    switch (node.kind) {
      case NodeKind::kGpu: return kGpuClass;
      case NodeKind::kNic: return kNicClass;
      default: return kBridgeClass;
    }
  }

  void writePci(pugi::xml_node parent, int id) {
    const Node& node = topo_.node(id);
    pugi::xml_node element = parent.append_child("pci");
    set(element, "busid", node.busId);
    set(element, "class", fmt::format("0x{:06x}", pciClass(node)));
    set(element, "link_speed", fmt::format("{:g} GT/s PCIe", node.pciGts));
    set(element, "link_width", std::to_string(node.pciWidth));
    if (node.kind == NodeKind::kGpu) writeGpu(element.append_child("gpu"), id);
    if (node.kind == NodeKind::kNic) writeNets(element.append_child("nic"), id);
    if (node.kind == NodeKind::kPciSwitch)
      for (int child : childrenOf(id)) writePci(element, child);
    // The tree's links are implied by nesting; a PCIe link that leaves the tree was a <pcilink>.
    for (int linkId : topo_.linksFrom(id)) {
      const Link& link = topo_.links()[linkId];
      if (link.kind == LinkKind::kPcie && link.to != node.parent &&
          topo_.node(link.to).parent != id)
        set(element.append_child("pcilink"), "target", topo_.node(link.to).busId);
    }
  }

  void writeGpu(pugi::xml_node element, int id) {
    const Node& gpu = topo_.node(id);
    if (gpu.dev >= 0) set(element, "dev", std::to_string(gpu.dev));
    if (gpu.sm > 0) set(element, "sm", std::to_string(gpu.sm));
    if (gpu.rank >= 0) set(element, "rank", std::to_string(gpu.rank));
    for (int linkId : topo_.linksFrom(id)) {
      const Link& link = topo_.links()[linkId];
      const Node& target = topo_.node(link.to);
      if (link.kind == LinkKind::kC2C) writeC2c(element, link);
      if (link.kind != LinkKind::kNvLink) continue;
      pugi::xml_node nvlink = element.append_child("nvlink");
      set(nvlink, "target", target.busId);
      set(nvlink, "count", std::to_string(link.count));
      uint32_t tclass = target.kind == NodeKind::kGpu        ? kGpuClass
                        : target.kind == NodeKind::kNvSwitch ? kNvSwitchClass
                                                             : kBridgeClass;
      set(nvlink, "tclass", fmt::format("0x{:06x}", tclass));
    }
  }

  // The C2C links of a GPU are one bundle: count links, bw GB/s in all. <c2c> gives whole MB/s
  // per link, as NCCL reads them, and its elements add up (in NCCL too); when the total is not a
  // multiple of the count (elements with different rates), two elements write it exactly.
  void writeC2c(pugi::xml_node gpu, const Link& link) {
    const int64_t total = std::llround(link.bw * 1000), count = std::max(link.count, 1);
    const int64_t each = total / count, faster = total % count;
    for (auto [links, mbps] : {std::pair{count - faster, each}, std::pair{faster, each + 1}}) {
      if (links == 0) continue;
      pugi::xml_node c2c = gpu.append_child("c2c");
      set(c2c, "count", std::to_string(links));
      set(c2c, "bw", std::to_string(mbps));
    }
  }

  void writeNets(pugi::xml_node nic, int id) {
    for (int linkId : topo_.linksFrom(id)) {
      const Link& link = topo_.links()[linkId];
      if (link.kind != LinkKind::kNet) continue;
      const Node& port = topo_.node(link.to);
      pugi::xml_node net = nic.append_child("net");
      set(net, "name", port.busId);
      if (port.dev >= 0) set(net, "dev", std::to_string(port.dev));
      set(net, "speed", std::to_string(std::llround(link.bw * 8000)));  // Mb/s, an integer for NCCL
      set(net, "port", std::to_string(port.port));
      if (!port.guid.empty()) set(net, "guid", port.guid);
      if (!port.linkLayer.empty()) set(net, "link_layer", port.linkLayer);  // tutti's own
    }
  }

  const Topology& topo_;
  std::multimap<int, int> children_;
};

}  // namespace

std::string toXml(const Topology& topo) {
  pugi::xml_document doc;
  Exporter(topo).write(doc);
  std::ostringstream out;
  doc.save(out, "  ", pugi::format_default | pugi::format_no_declaration);
  return out.str();
}

void saveXmlFile(const Topology& topo, const std::string& path) {
  pugi::xml_document doc;
  Exporter(topo).write(doc);
  if (!doc.save_file(path.c_str(), "  ", pugi::format_default | pugi::format_no_declaration))
    throwSystemError(fmt::format("topology file {}: cannot write", path), errno);
}

}  // namespace tutti::topology
