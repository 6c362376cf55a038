// Import of NCCL's topology XML: system > cpu > pci* > gpu (nvlink, c2c) | nic (net), as NCCL
// writes it (NCCL_TOPO_DUMP_FILE) and as clouds ship it. Where a file is silent the importer
// infers and says so in Topology::notes: GPUs and NICs from PCI class codes, PCIe Gen3 x16 for
// an empty link_speed or a zero link_width, one NVSwitch per host for NVLink targets absent
// from the file. Unknown elements are ignored with a warning.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "base/log.hpp"
#include "topology/bandwidth.hpp"
#include "topology/import_common.hpp"
#include "topology/nvlink.hpp"
#include "topology/topology.hpp"
#include "topology/xml_reader.hpp"

namespace tutti::topology {
namespace {

constexpr double kDefaultGts = 8;  // PCIe Gen3
constexpr int kDefaultWidth = 16;
constexpr uint64_t kNvSwitchClass = 0x068000;
constexpr uint64_t kBridgeClass = 0x0604;

// The class of a device whose element has none (or 0): the export writes it, so that NCCL, which
// needs one, reads it as the same kind.
uint32_t kindClass(NodeKind kind) {
  switch (kind) {
    case NodeKind::kGpu: return 0x030200;
    case NodeKind::kNic: return 0x020000;
    default: return kBridgeClass << 8;
  }
}

struct PendingLink {
  int from;
  pugi::xml_node element;
  std::string target;
  int count;
  uint64_t tclass;
};

Node makeNode(NodeKind kind, int host, std::string busId, int parent) {
  Node node;
  node.kind = kind;
  node.host = host;
  node.busId = std::move(busId);
  node.parent = parent;
  return node;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

class Importer {
 public:
  explicit Importer(const XmlReader& in) : in_(in) {}

  Topology run() {
    pugi::xml_node system = in_.document().first_child();
    while (system && system.type() != pugi::node_element) system = system.next_sibling();
    if (!system || std::string_view(system.name()) != "system")
      in_.fail(system, "the root element must be <system>");
    if (auto version = in_.integer(system, "version", 0, 1000); version && *version != 1)
      in_.fail(system, fmt::format("unsupported version {} (tutti reads version 1 and NCCL refuses "
                                   "any other too; RCCL writes version 2, for AMD GPUs)",
                                   *version));
    for (pugi::xml_node child : system.children()) {
      if (child.type() != pugi::node_element) continue;
      if (std::string_view(child.name()) == "cpu")
        readCpu(child);
      else
        in_.warn(child, "unknown element ignored");
    }
    connectCpus();
    resolveNvLinks();
    resolvePciLinks();
    if (!inferred_.empty()) note(fmt::format("inferred: {}", fmt::join(inferred_, "; ")));
    if (defaultedSpeed_ > 0)
      note(fmt::format("{} PCIe links without a known link_speed: taken as Gen3 (8 GT/s)",
                       defaultedSpeed_));
    if (defaultedWidth_ > 0)
      note(fmt::format("{} PCIe links with link_width 0 or none: taken as x16", defaultedWidth_));
    topo_.computePaths();
    return std::move(topo_);
  }

 private:
  void note(std::string text) {
    log::info("topology file {}: {}", in_.name(), text);
    topo_.notes.push_back(std::move(text));
  }

  // Elements a parent may hold; others draw a warning.
  void checkChildren(const pugi::xml_node& node, std::initializer_list<std::string_view> known) {
    for (pugi::xml_node child : node.children()) {
      if (child.type() != pugi::node_element) continue;
      if (std::find(known.begin(), known.end(), child.name()) == known.end())
        in_.warn(child, "unknown element ignored");
    }
  }

  // Every node but the host's NVSwitch (added at the end, as NVLinks name it) joins here, within
  // the bounds every import shares.
  int add(const pugi::xml_node& element, Node node) {
    if (std::string problem = nodeProblem(topo_, node); !problem.empty())
      in_.fail(element, problem);
    return topo_.addNode(std::move(node));
  }

  void readCpu(const pugi::xml_node& element) {
    checkChildren(element, {"pci", "nic"});
    Node cpu;
    cpu.kind = NodeKind::kCpu;
    cpu.host = topo_.addHost(in_.text(element, "host_hash"));
    cpu.numaId = static_cast<int>(in_.integer(element, "numaid", -1, 65535).value_or(-1));
    cpu.arch = in_.text(element, "arch");
    cpu.vendor = in_.text(element, "vendor");
    cpu.family = static_cast<int>(in_.integer(element, "familyid", -1, 65535).value_or(-1));
    cpu.model = static_cast<int>(in_.integer(element, "modelid", -1, 65535).value_or(-1));
    int ordinal = static_cast<int>(topo_.nodesOf(NodeKind::kCpu, cpu.host).size());
    cpu.busId = cpu.numaId >= 0 ? fmt::format("numa{}", cpu.numaId) : fmt::format("cpu{}", ordinal);
    if (cpu.numaId < 0) cpu.inferred = "numaid unknown (-1 or missing)";
    int id = add(element, cpu);
    for (pugi::xml_node child : element.children("pci")) readPci(child, id, 1);
    for (pugi::xml_node child : element.children("nic")) {
      Node nic = makeNode(NodeKind::kNic, cpu.host, fmt::format("nic{}", nicsWithoutPci_++), id);
      nic.inferred = "NIC without a PCI device: attached to its CPU at its ports' speed";
      int nicId = add(child, nic);
      topo_.addLink(id, nicId, LinkKind::kPcie, readNets(child, nicId, 0));
    }
  }

  // Sets the node's PCIe rate and width (defaults where the file is silent); returns its
  // bandwidth.
  double readPcieLink(const pugi::xml_node& element, Node& node) {
    auto gts = pcieGts(in_.text(element, "link_speed"));
    if (!gts) ++defaultedSpeed_;
    auto width = in_.integer(element, "link_width", 0, 32).value_or(0);
    if (width == 0) ++defaultedWidth_;
    node.pciGts = gts.value_or(kDefaultGts);
    node.pciWidth = static_cast<int>(width ? width : kDefaultWidth);
    return pcieLaneBw(node.pciGts) * node.pciWidth;
  }

  // Checks the attributes of a <pci> element; returns its class (0 when absent).
  uint64_t checkPci(const pugi::xml_node& element, int depth) {
    if (depth > kMaxPciDepth) in_.fail(element, fmt::format("nested deeper than {}", kMaxPciDepth));
    if (in_.text(element, "busid").empty()) in_.fail(element, "missing busid");
    uint64_t cls = in_.hex(element, "class", 0xffffff).value_or(0);
    in_.hex(element, "vendor", 0xffff);
    in_.hex(element, "device", 0xffff);
    in_.integer(element, "link_width", 0, 32);
    return cls;
  }

  // What a <pci> element becomes: a GPU or a NIC (by its <gpu> or <nic>, or its class), a switch
  // (a bridge), and a device of another class a switch when some node is kept under it; nothing
  // otherwise (left out with all it holds). Holding a <pci> is not enough: the export writes only
  // what was kept, and a switch over devices all left out would come back as a bare device of its
  // class, and be left out. Checks every <pci> it looks at, so a subtree left out is checked too.
  std::optional<NodeKind> pciKind(const pugi::xml_node& element, int depth) {
    uint64_t cls = checkPci(element, depth);
    if (element.child("gpu") || cls >> 16 == 0x03) return NodeKind::kGpu;
    if (element.child("nic") || cls >> 16 == 0x02) return NodeKind::kNic;
    if (cls >> 8 == kBridgeClass) return NodeKind::kPciSwitch;
    auto [known, fresh] = holdsNode_.try_emplace(element.internal_object(), false);
    if (fresh)
      for (pugi::xml_node child : element.children("pci"))
        if (pciKind(child, depth + 1)) {
          known->second = true;
          break;
        }
    if (known->second) return NodeKind::kPciSwitch;
    return std::nullopt;
  }

  void readPci(const pugi::xml_node& element, int parent, int depth) {
    std::optional<NodeKind> kind = pciKind(element, depth);
    checkChildren(element, {"pci", "gpu", "nic", "pcilink"});
    Node node;
    node.host = topo_.node(parent).host;
    node.parent = parent;
    node.busId = lower(in_.text(element, "busid"));
    uint64_t cls = in_.hex(element, "class", 0xffffff).value_or(0);
    node.pciClass = static_cast<uint32_t>(cls);
    double bw = readPcieLink(element, node);
    pugi::xml_node gpu = element.child("gpu"), nic = element.child("nic");
    if (!kind) {
      log::info("topology file {}: line {}: PCI device {} (class 0x{:06x}){} ignored", in_.name(),
                in_.line(element), node.busId, cls,
                element.child("pci") ? " and the devices under it" : "");
      return;
    }
    node.kind = *kind;
    if (cls == 0) node.pciClass = kindClass(node.kind);  // as the export writes it
    if (node.kind == NodeKind::kGpu) {
      if (!gpu) node.inferred = fmt::format("GPU inferred from PCI class 0x{:06x}", cls);
      readGpuAttributes(gpu, node);
    } else if (node.kind == NodeKind::kNic && !nic) {
      node.inferred = fmt::format("NIC inferred from PCI class 0x{:06x}", cls);
    }
    if (!node.inferred.empty()) inferred_.push_back(node.busId + ": " + node.inferred);
    int id = add(element, node);
    topo_.addLink(parent, id, LinkKind::kPcie, bw);
    if (node.kind == NodeKind::kGpu && gpu) readGpuLinks(gpu, id);
    if (node.kind == NodeKind::kNic && nic) readNets(nic, id, bw);
    if (node.kind == NodeKind::kPciSwitch)
      for (pugi::xml_node child : element.children("pci")) readPci(child, id, depth + 1);
    for (pugi::xml_node link : element.children("pcilink")) {
      std::string target = lower(in_.text(link, "target"));
      // NCCL adds such a link and no path uses it.
      if (target == node.busId)
        in_.warn(link, "a pcilink from the device to itself: ignored");
      else
        pciLinks_.push_back({id, link, std::move(target), 1, 0});
    }
  }

  void readGpuAttributes(const pugi::xml_node& gpu, Node& node) {
    if (!gpu) return;
    node.sm = static_cast<int>(in_.integer(gpu, "sm", 0, 1000).value_or(0));
    node.dev = static_cast<int>(in_.integer(gpu, "dev", -1, 1 << 20).value_or(-1));
    node.rank = static_cast<int>(in_.integer(gpu, "rank", -1, 1 << 24).value_or(-1));
    if (node.sm == 0) node.inferred = "SM version unknown: NVLink taken at Volta's rate";
  }

  // An element's link count, added to the GPU's total of that kind: the links to one target
  // (every NVSwitch is the one node) become one link, and its count must read back.
  int linkCount(const pugi::xml_node& link, int& total) {
    int count = static_cast<int>(in_.integer(link, "count", 1, kMaxLinksPerGpu).value_or(1));
    total += count;
    if (total > kMaxLinksPerGpu)
      in_.fail(link, fmt::format("more than {} links of this kind from one GPU", kMaxLinksPerGpu));
    return count;
  }

  void readGpuLinks(const pugi::xml_node& gpu, int id) {
    checkChildren(gpu, {"nvlink", "c2c"});
    int nvLinks = 0, c2cLinks = 0;
    for (pugi::xml_node link : gpu.children("nvlink")) {
      std::string target = lower(in_.text(link, "target"));
      if (target.empty()) in_.fail(link, "missing target");
      if (target == topo_.node(id).busId) {
        in_.warn(link,
                 "an NVLink from the GPU to itself: ignored");  // NCCL's adds nothing a path uses
        continue;
      }
      int count = linkCount(link, nvLinks);
      nvLinks_.push_back({id, link, target, count, in_.hex(link, "tclass", 0xffffff).value_or(0)});
    }
    for (pugi::xml_node link : gpu.children("c2c")) {
      int64_t count = linkCount(link, c2cLinks);
      auto mbps = in_.integer(link, "bw", 0, 10'000'000).value_or(0);  // MB/s per link
      topo_.addLink(id, cpuOf(id), LinkKind::kC2C, static_cast<double>(count * mbps) / 1000.0,
                    static_cast<int>(count));
    }
  }

  // Adds the NET ports of a NIC; returns their total bandwidth. A port without a speed is taken
  // at the NIC's PCIe bandwidth (pciBw).
  double readNets(const pugi::xml_node& nic, int nicId, double pciBw) {
    checkChildren(nic, {"net"});
    double total = 0;
    for (pugi::xml_node net : nic.children("net")) {
      Node port = makeNode(NodeKind::kNet, topo_.node(nicId).host, "", nicId);
      port.name = in_.text(net, "name");
      port.guid = in_.text(net, "guid");
      port.linkLayer = in_.text(net, "link_layer");
      in_.hex(net, "guid", UINT64_MAX);
      port.port = static_cast<int>(in_.integer(net, "port", 0, 1024).value_or(0));
      port.dev = static_cast<int>(in_.integer(net, "dev", -1, 1 << 20).value_or(-1));
      port.busId = !port.name.empty() ? port.name : fmt::format("net{}", port.dev);
      // Mb/s; some NICs report -1, which NCCL reads as unknown, as it does 0.
      auto speed = in_.real(net, "speed", -1e7, 1e7);
      if (speed && *speed <= 0) speed.reset();
      if (speed) speed = std::round(*speed);  // whole Mb/s, as NCCL reads (and writes) it
      if (!speed) port.inferred = "speed unknown: taken at its NIC's PCIe bandwidth";
      double bw = speed ? netBw(*speed) : pciBw;
      int id = add(net, port);
      topo_.addLink(nicId, id, LinkKind::kNet, bw);
      total += bw;
    }
    return total;
  }

  int cpuOf(int id) const {
    while (topo_.node(id).kind != NodeKind::kCpu) id = topo_.node(id).parent;
    return id;
  }

  void connectCpus() {
    for (int host = 0; host < static_cast<int>(topo_.hosts().size()); ++host) {
      std::vector<int> cpus = topo_.nodesOf(NodeKind::kCpu, host);
      for (size_t a = 0; a < cpus.size(); ++a)
        for (size_t b = a + 1; b < cpus.size(); ++b) {
          const Node &x = topo_.node(cpus[a]), &y = topo_.node(cpus[b]);
          double bw = std::min(smpBw(x.arch, x.vendor, x.model), smpBw(y.arch, y.vendor, y.model));
          topo_.addLink(cpus[a], cpus[b], LinkKind::kSmp, bw);
        }
    }
  }

  // NVLinks: to a GPU, one direction per <nvlink> (the peer lists the other); to an NVSwitch,
  // both directions to the host's one NVSwitch node; to a CPU (class 0x0604, POWER9), its CPU.
  void resolveNvLinks() {
    std::map<std::pair<int, std::string>, PendingLink> merged;
    for (const PendingLink& link : nvLinks_) {
      auto [it, fresh] = merged.try_emplace({link.from, link.target}, link);
      if (!fresh) it->second.count += link.count;
    }
    std::set<std::string> absentSwitches;
    for (const auto& [key, link] : merged) {
      const Node& gpu = topo_.node(link.from);
      double bw = link.count * nvlinkBw(gpu.sm);
      int target = topo_.findBusId(gpu.host, link.target);
      if (target >= 0 && topo_.node(target).kind == NodeKind::kGpu) {
        topo_.addDirectedLink(link.from, target, LinkKind::kNvLink, bw, link.count);
      } else if (link.tclass == kNvSwitchClass) {
        if (target < 0) absentSwitches.insert(link.target);
        addNvLinksToSwitch(topo_, link.from, link.count);
      } else if (link.tclass >> 8 == kBridgeClass) {
        topo_.addLink(link.from, cpuOf(link.from), LinkKind::kNvLink, bw, link.count);
      } else {
        in_.warn(link.element, "NVLink target not in the file: ignored");
      }
    }
    if (!absentSwitches.empty())
      note(
          fmt::format("NVLink targets {} are NVSwitches absent from the file: modelled as one "
                      "NVSwitch per host",
                      fmt::join(absentSwitches, ", ")));
  }

  // A <pcilink> adds a PCIe link, one direction, to another PCI device at the device's own
  // bandwidth. One to what is not a PCI device (a CPU, an NVSwitch, a port), or to a device it is
  // already linked to (its parent, a child, a target named twice), is ignored: it would join that
  // link, and the export, which writes the tree as nesting, could not tell it apart.
  void resolvePciLinks() {
    for (const PendingLink& link : pciLinks_) {
      int target = topo_.findBusId(topo_.node(link.from).host, link.target);
      if (target < 0) {
        in_.warn(link.element, "pcilink target not in the file: ignored");
        continue;
      }
      const Node& to = topo_.node(target);
      if (to.pciWidth == 0) {
        in_.warn(link.element, "pcilink target is not a PCI device: ignored");
        continue;
      }
      const std::vector<int>& out = topo_.linksFrom(link.from);
      if (std::any_of(out.begin(), out.end(), [&](int id) {
            return topo_.links()[id].to == target && topo_.links()[id].kind == LinkKind::kPcie;
          })) {
        in_.warn(link.element, "pcilink to a device already linked to it: ignored");
        continue;
      }
      const Link& up = topo_.links()[out.front()];
      topo_.addDirectedLink(link.from, target, LinkKind::kPcie, up.bw);
    }
  }

  const XmlReader& in_;
  Topology topo_;
  std::vector<PendingLink> nvLinks_, pciLinks_;
  std::map<const void*, bool> holdsNode_;  // pciKind's answer for devices of another class
  std::vector<std::string> inferred_;
  int defaultedSpeed_ = 0, defaultedWidth_ = 0, nicsWithoutPci_ = 0;
};

}  // namespace

Topology parseXml(std::string_view text, const std::string& name) {
  XmlReader reader(text, name);
  return Importer(reader).run();
}

Topology loadXmlFile(const std::string& path) {
  return parseXml(readTopologyText(path), path);
}

}  // namespace tutti::topology
