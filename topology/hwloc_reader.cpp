// hwloc's view of a machine, live or from its XML, as a graph: one CPU node per NUMA node (vendor
// and model from its package), the hardware threads with their core and package, the PCI tree
// below the host bridges, GPUs (NVIDIA and AMD display class) and NICs (network class) with their
// ports. The device facts refine what hwloc cannot know: HCA port speeds, GUIDs and link layers
// (libibverbs; the PCI functions of one dual-port card are one NIC), GPU SM versions and NVLinks
// (NVML); where libibverbs lists no HCA, sysfs' RDMA devices stand in for it. Without them, GPUs
// and ports say in `inferred` what was assumed. A machine without GPUs or HCAs is normal: logged
// at INFO.
#include "topology/hwloc_reader.hpp"

#include <fmt/format.h>
#include <hwloc.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>

#include "base/error.hpp"
#include "base/log.hpp"
#include "topology/bandwidth.hpp"
#include "topology/import_common.hpp"
#include "topology/nvlink.hpp"

namespace tutti::topology {
namespace {

constexpr uint16_t kNvidia = 0x10de, kAmd = 0x1002;
constexpr double kDefaultGts = 8;
constexpr int kDefaultWidth = 16;

std::string readLine(const std::string& path) {
  std::ifstream file(path);
  std::string line;
  std::getline(file, line);
  return line;
}

// hwloc's link speed (GB/s: lanes x rate x encoding, as its Linux backend computes it) back to a
// generation and width. Gen N xW and Gen N+1 xW/2 give the same figure and the same bandwidth;
// the wider reading is kept.
bool decodeLinkSpeed(float gbs, Node& node) {
  struct Gen {
    double gts, encoding;
  };
  constexpr Gen kGens[] = {{2.5, 0.8},        {5, 0.8},          {8, 128 / 130.0},
                           {16, 128 / 130.0}, {32, 128 / 130.0}, {64, 242 / 256.0}};
  for (int width : {16, 8, 4, 2, 1, 32})
    for (const Gen& gen : kGens)
      if (std::abs(gen.gts * gen.encoding / 8 * width - gbs) < 0.01 * gbs) {
        node.pciGts = gen.gts;
        node.pciWidth = width;
        return true;
      }
  return false;
}

class HwlocReader {
 public:
  // xml: hwloc XML read from the file `name`; nullptr: the live machine.
  HwlocReader(const std::string* xml, const std::string& name, const DeviceFacts& facts,
              bool withIo)
      : live_(xml == nullptr),
        withIo_(withIo),
        source_(live_ ? "topology probe" : "topology file " + name) {
    if (hwloc_topology_init(&hw_) != 0) throwSystemError("hwloc_topology_init", errno);
    hwloc_topology_set_io_types_filter(
        hw_, withIo ? HWLOC_TYPE_FILTER_KEEP_IMPORTANT : HWLOC_TYPE_FILTER_KEEP_NONE);
    // Linux's own backend reads the PCI tree from sysfs; the libpciaccess plugin ("pci") adds
    // nothing there and leaks, the OpenCL and GL plugins would load drivers for nothing.
    for (const char* component : {"pci", "opencl", "gl"})
      hwloc_topology_set_components(hw_, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, component);
    // From memory, not the path: the file may be a pipe, read once (hwloc counts the ending
    // '\0', which std::string keeps).
    if (xml &&
        hwloc_topology_set_xmlbuffer(hw_, xml->c_str(), static_cast<int>(xml->size() + 1)) != 0) {
      int error = errno;
      hwloc_topology_destroy(hw_);
      throwSystemError(fmt::format("{}: not readable as hwloc XML", source_), error);
    }
    if (hwloc_topology_load(hw_) != 0) {
      int error = errno;
      hwloc_topology_destroy(hw_);
      raise(ErrorCode::kInvalidArgument,
            "{}: hwloc cannot load it ({}; HWLOC_XML_VERBOSE=1 says why)", source_,
            std::strerror(error));
    }
    cards_ = hcaCards(facts.hcas);
    cardNic_.assign(cards_.size(), -1);
    for (size_t card = 0; card < cards_.size(); ++card)
      for (const Hca* hca : cards_[card].hcas) cardOf_[hca->busId] = card;
    for (const GpuFacts& gpu : facts.gpus) gpus_[gpu.busId] = &gpu;
  }
  ~HwlocReader() { hwloc_topology_destroy(hw_); }
  HwlocReader(const HwlocReader&) = delete;
  HwlocReader& operator=(const HwlocReader&) = delete;

  Topology run() {
    topo_.addHost("");
    addCpus();
    addPus();
    if (withIo_) {
      walkIo(hwloc_get_root_obj(hw_));
      addNvLinks();
      if (topo_.nodesOf(NodeKind::kGpu).empty()) log::info("{}: no GPU found", source_);
      if (!foundHca_) log::info("{}: no InfiniBand/RDMA device found", source_);
    }
    topo_.computePaths();
    return std::move(topo_);
  }

 private:
  void addCpus() {
    std::string arch = info(hwloc_get_root_obj(hw_), "Architecture");
    int count = hwloc_get_nbobjs_by_type(hw_, HWLOC_OBJ_NUMANODE);
    for (int i = 0; i < count; ++i) {
      hwloc_obj_t numa = hwloc_get_obj_by_type(hw_, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
      hwloc_obj_t package = hwloc_get_ancestor_obj_by_type(hw_, HWLOC_OBJ_PACKAGE, numa);
      Node cpu;
      cpu.kind = NodeKind::kCpu;
      cpu.numaId = static_cast<int>(numa->os_index);
      cpu.package = package ? static_cast<int>(package->os_index) : -1;
      cpu.busId = fmt::format("numa{}", cpu.numaId);
      cpu.arch = arch;
      cpu.vendor = info(package, "CPUVendor");
      cpu.family = std::atoi(info(package, "CPUFamilyNumber", "-1").c_str());
      cpu.model = std::atoi(info(package, "CPUModelNumber", "-1").c_str());
      cpus_[numa->os_index] = topo_.addNode(cpu);
    }
    if (cpus_.empty()) raise(ErrorCode::kSystem, "{}: hwloc reports no NUMA node", source_);
    std::vector<int> ids = topo_.nodesOf(NodeKind::kCpu);
    for (size_t a = 0; a < ids.size(); ++a)
      for (size_t b = a + 1; b < ids.size(); ++b) {
        const Node& x = topo_.node(ids[a]);
        topo_.addLink(ids[a], ids[b], LinkKind::kSmp, smpBw(x.arch, x.vendor, x.model));
      }
  }

  void addPus() {
    int count = hwloc_get_nbobjs_by_type(hw_, HWLOC_OBJ_PU);
    for (int i = 0; i < count; ++i) {
      hwloc_obj_t pu = hwloc_get_obj_by_type(hw_, HWLOC_OBJ_PU, static_cast<unsigned>(i));
      hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(hw_, HWLOC_OBJ_CORE, pu);
      hwloc_obj_t package = hwloc_get_ancestor_obj_by_type(hw_, HWLOC_OBJ_PACKAGE, pu);
      Pu entry;
      entry.os = static_cast<int>(pu->os_index);
      entry.core = core ? static_cast<int>(core->logical_index) : -1;
      entry.package = package ? static_cast<int>(package->os_index) : -1;
      entry.cpu = cpuOf(pu);
      topo_.pus.push_back(entry);
    }
  }

  static std::string info(hwloc_obj_t obj, const char* name, const char* otherwise = "") {
    const char* value = obj ? hwloc_obj_get_info_by_name(obj, name) : nullptr;
    return value ? value : otherwise;
  }

  // The CPU node of the NUMA node closest to an object (its own for a PU, its ancestor's for I/O).
  int cpuOf(hwloc_obj_t obj) {
    hwloc_obj_t ancestor = hwloc_get_non_io_ancestor_obj(hw_, obj);
    int numa = ancestor && ancestor->nodeset ? hwloc_bitmap_first(ancestor->nodeset) : -1;
    auto it = cpus_.find(numa < 0 ? 0u : static_cast<unsigned>(numa));
    return it != cpus_.end() ? it->second : cpus_.begin()->second;
  }

  void walkIo(hwloc_obj_t obj) {
    for (hwloc_obj_t child = obj->first_child; child; child = child->next_sibling) walkIo(child);
    for (hwloc_obj_t io = obj->io_first_child; io; io = io->next_sibling) addIo(io, -1);
  }

  // nullopt: a device the graph leaves out (disks, display adapters of other vendors).
  std::optional<NodeKind> kindOf(hwloc_obj_t io, const hwloc_obj_attr_u::hwloc_pcidev_attr_s& pci,
                                 const std::string& busId) const {
    if (io->type == HWLOC_OBJ_BRIDGE) return NodeKind::kPciSwitch;
    bool display = pci.class_id >> 8 == 0x03;
    if (gpus_.count(busId) || (display && (pci.vendor_id == kNvidia || pci.vendor_id == kAmd)))
      return NodeKind::kGpu;
    if (pci.class_id >> 8 == 0x02 || cardOf_.count(busId)) return NodeKind::kNic;
    return std::nullopt;
  }

  // parent -1: attach to the CPU closest to the object.
  void addIo(hwloc_obj_t io, int parent) {
    if (parent < 0) parent = cpuOf(io);
    if (io->type == HWLOC_OBJ_BRIDGE && io->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST) {
      for (hwloc_obj_t child = io->io_first_child; child; child = child->next_sibling)
        addIo(child, parent);
      return;
    }
    if (io->type != HWLOC_OBJ_BRIDGE && io->type != HWLOC_OBJ_PCI_DEVICE) return;
    const hwloc_obj_attr_u::hwloc_pcidev_attr_s& pci =
        io->type == HWLOC_OBJ_BRIDGE ? io->attr->bridge.upstream.pci : io->attr->pcidev;
    Node node;
    node.host = 0;
    node.parent = parent;
    node.busId = fmt::format("{:04x}:{:02x}:{:02x}.{:x}", pci.domain, pci.bus, pci.dev, pci.func);
    node.pciClass = static_cast<uint32_t>(pci.class_id) << 8;
    std::optional<NodeKind> kind = kindOf(io, pci, node.busId);
    if (!kind) return;
    node.kind = *kind;
    auto card = node.kind == NodeKind::kNic ? cardOf_.find(node.busId) : cardOf_.end();
    if (card != cardOf_.end() && cardNic_[card->second] >= 0) {
      // Another PCI function of a card already in the graph: its ports are that NIC's.
      const int nic = cardNic_[card->second];
      log::info("{}: {} is a function of the card at {}: one NIC", source_, node.busId,
                topo_.node(nic).busId);
      for (hwloc_obj_t child = io->io_first_child; child; child = child->next_sibling)
        if (child->type != HWLOC_OBJ_OS_DEVICE) addIo(child, nic);
      return;
    }
    if (node.kind == NodeKind::kGpu) describeGpu(node);
    readPcieLink(node, pci);
    int id = topo_.addNode(node);
    topo_.addLink(parent, id, LinkKind::kPcie, pcieLaneBw(node.pciGts) * node.pciWidth);
    if (card != cardOf_.end()) {
      cardNic_[card->second] = id;
      addCardPorts(cards_[card->second], id);
    }
    for (hwloc_obj_t child = io->io_first_child; child; child = child->next_sibling) {
      if (child->type != HWLOC_OBJ_OS_DEVICE)
        addIo(child, id);
      else if (node.kind == NodeKind::kNic && card == cardOf_.end())
        addPort(child, id);
    }
  }

  void describeGpu(Node& node) const {
    auto facts = gpus_.find(node.busId);
    if (facts == gpus_.end()) {
      node.inferred = "GPU found by PCI class: SM version and NVLinks unknown (no NVML)";
      return;
    }
    node.sm = facts->second->sm;
    node.dev = facts->second->dev;
  }

  void readPcieLink(Node& node, const hwloc_obj_attr_u::hwloc_pcidev_attr_s& pci) {
    bool known = false;
    if (live_) {
      // sysfs as NCCL reads it: exact generation and width.
      std::string dir = "/sys/bus/pci/devices/" + node.busId + "/";
      auto gts = pcieGts(readLine(dir + "current_link_speed"));
      int width = std::atoi(readLine(dir + "current_link_width").c_str());
      known = gts && width > 0 && width <= 32;
      node.pciGts = gts.value_or(kDefaultGts);
      node.pciWidth = width > 0 && width <= 32 ? width : kDefaultWidth;
    } else {
      known = pci.linkspeed > 0 && decodeLinkSpeed(pci.linkspeed, node);
    }
    if (known) return;
    node.pciGts = kDefaultGts;
    node.pciWidth = kDefaultWidth;
    if (!node.inferred.empty()) node.inferred += "; ";
    node.inferred += "PCIe link unknown: taken as Gen3 x16";
  }

  // A NIC's port as hwloc sees it (a network interface or an RDMA device without verbs facts).
  void addPort(hwloc_obj_t os, int nic) {
    auto kind = os->attr->osdev.type;
    if (kind != HWLOC_OBJ_OSDEV_NETWORK && kind != HWLOC_OBJ_OSDEV_OPENFABRICS) return;
    if (kind == HWLOC_OBJ_OSDEV_OPENFABRICS) foundHca_ = true;
    Node port;
    port.kind = NodeKind::kNet;
    port.parent = nic;
    port.busId = port.name = os->name ? os->name : "net";
    int mbps = live_ && kind == HWLOC_OBJ_OSDEV_NETWORK
                   ? std::atoi(readLine("/sys/class/net/" + port.name + "/speed").c_str())
                   : 0;
    const Link& up = topo_.links()[topo_.linksFrom(nic).front()];
    double upBw = up.bw;
    if (mbps <= 0) port.inferred = "speed unknown: taken at its NIC's PCIe bandwidth";
    int id = topo_.addNode(port);
    topo_.addLink(nic, id, LinkKind::kNet, mbps > 0 ? netBw(mbps) : upBw);
  }

  // A card's active ports as libibverbs reports them, those of all its PCI functions.
  void addCardPorts(const HcaCard& card, int nic) {
    foundHca_ = true;
    for (const Hca* hca : card.hcas)
      for (const HcaPort& facts : hca->ports)
        if (!facts.active || facts.mbps <= 0)
          log::info("{}: {} port {} is not active: not used", source_, hca->name, facts.port);
    for (const CardPort& facts : card.ports) {
      Node port;
      port.kind = NodeKind::kNet;
      port.parent = nic;
      port.name = facts.name;
      port.busId = facts.busId;
      port.guid = card.guid;
      port.port = facts.port;
      port.linkLayer = facts.linkLayer;
      int id = topo_.addNode(port);
      topo_.addLink(nic, id, LinkKind::kNet, netBw(facts.mbps));
    }
  }

  // NVML lists each GPU's lanes: to a GPU (this direction; the peer lists its own), to an
  // NVSwitch (the host's one node), or to something else (a POWER9 CPU's NVLink bridge).
  void addNvLinks() {
    for (const auto& [busId, facts] : gpus_) {
      int gpu = topo_.findBusId(0, busId);
      if (gpu < 0) continue;
      for (const NvLinkPeer& peer : facts->nvlinks) {
        int target = topo_.findBusId(0, peer.busId);
        double bw = peer.count * nvlinkBw(facts->sm);
        if (peer.isSwitch)
          addNvLinksToSwitch(topo_, gpu, peer.count);
        else if (target >= 0 && topo_.node(target).kind == NodeKind::kGpu)
          topo_.addDirectedLink(gpu, target, LinkKind::kNvLink, bw, peer.count);
        else
          topo_.addLink(gpu, cpuOf(gpu), LinkKind::kNvLink, bw, peer.count);
      }
    }
  }

  int cpuOf(int id) const {
    while (topo_.node(id).kind != NodeKind::kCpu) id = topo_.node(id).parent;
    return id;
  }

  hwloc_topology_t hw_ = nullptr;
  bool live_, withIo_;
  std::string source_;  // for messages
  Topology topo_;
  std::map<unsigned, int> cpus_;  // NUMA os index -> CPU node
  std::vector<HcaCard> cards_;
  std::map<std::string, size_t> cardOf_;  // an HCA's bus id -> its card
  std::vector<int> cardNic_;              // per card: its NIC node, -1 until added
  std::map<std::string, const GpuFacts*> gpus_;
  bool foundHca_ = false;
};

}  // namespace

Topology readHwloc(const std::string& xmlPath, const DeviceFacts& facts, bool withIo) {
  if (xmlPath.empty()) return HwlocReader(nullptr, "", facts, withIo).run();
  const std::string xml = readTopologyText(xmlPath);
  return HwlocReader(&xml, xmlPath, facts, withIo).run();
}

Topology loadHwlocXmlFile(const std::string& path) {
  return readHwloc(path, {});
}

Topology parseHwlocXml(std::string_view text, const std::string& name) {
  const std::string xml(text);
  return HwlocReader(&xml, name, {}, true).run();
}

Topology probeHost(ProbeScope scope) {
  if (scope == ProbeScope::kCpus) return readHwloc("", {}, false);
  DeviceFacts facts{probeHcas(), probeGpus()};
  if (facts.hcas.empty()) {
    // hwloc reads the live /sys, so its ports come from there too, whatever TUTTI_SYSFS_ROOT says.
    try {
      facts.hcas = hcasFromSysfs(readRdmaDevices("/sys", RdmaCounters::kSkip));
    } catch (const Error& error) {
      log::info("topology probe: no RDMA devices from sysfs: {}", error.what());
    }
    if (!facts.hcas.empty())
      log::info("topology probe: {} RDMA devices from sysfs (libibverbs lists none)",
                facts.hcas.size());
  }
  return readHwloc("", facts);
}

}  // namespace tutti::topology
