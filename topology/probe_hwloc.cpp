// Probe of the live machine with hwloc: one CPU node per NUMA node (vendor and model from its
// package), the PCI tree below the host bridges, GPUs (NVIDIA and AMD by PCI class) and NICs with
// their network ports (hwloc OS devices). PCIe rate and width come from sysfs as NCCL reads them,
// port speeds from /sys/class/net. GPU SM versions and NVLinks need CUDA/NVML and HCA speeds
// need libibverbs, which this probe does not load: such GPUs and ports say so in `inferred`.
// A machine without GPUs or HCAs is normal: logged at INFO.
#include <fmt/format.h>
#include <hwloc.h>
#include <sys/utsname.h>

#include <fstream>
#include <map>
#include <memory>

#include "base/error.hpp"
#include "base/log.hpp"
#include "topology/bandwidth.hpp"
#include "topology/topology.hpp"

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

class HwlocProbe {
 public:
  HwlocProbe() {
    if (hwloc_topology_init(&hw_) != 0) throwSystemError("hwloc_topology_init", errno);
    hwloc_topology_set_io_types_filter(hw_, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    // Linux's own backend reads the PCI tree from sysfs; the libpciaccess plugin ("pci") adds
    // nothing there and leaks, the OpenCL and GL plugins would load drivers for nothing.
    for (const char* component : {"pci", "opencl", "gl"})
      hwloc_topology_set_components(hw_, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, component);
    if (hwloc_topology_load(hw_) != 0) {
      hwloc_topology_destroy(hw_);
      throwSystemError("hwloc_topology_load", errno);
    }
  }
  ~HwlocProbe() { hwloc_topology_destroy(hw_); }
  HwlocProbe(const HwlocProbe&) = delete;
  HwlocProbe& operator=(const HwlocProbe&) = delete;

  Topology run() {
    topo_.addHost("");
    addCpus();
    walkIo(hwloc_get_root_obj(hw_));
    if (topo_.nodesOf(NodeKind::kGpu).empty()) log::info("topology probe: no GPU found");
    if (!foundHca_) log::info("topology probe: no InfiniBand/RDMA device found");
    topo_.computePaths();
    return std::move(topo_);
  }

 private:
  void addCpus() {
    utsname names{};
    uname(&names);
    int count = hwloc_get_nbobjs_by_type(hw_, HWLOC_OBJ_NUMANODE);
    for (int i = 0; i < count; ++i) {
      hwloc_obj_t numa = hwloc_get_obj_by_type(hw_, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
      hwloc_obj_t package = hwloc_get_ancestor_obj_by_type(hw_, HWLOC_OBJ_PACKAGE, numa);
      Node cpu;
      cpu.kind = NodeKind::kCpu;
      cpu.numaId = static_cast<int>(numa->os_index);
      cpu.busId = fmt::format("numa{}", cpu.numaId);
      cpu.arch = names.machine;
      cpu.vendor = info(package, "CPUVendor");
      cpu.family = std::atoi(info(package, "CPUFamilyNumber", "-1").c_str());
      cpu.model = std::atoi(info(package, "CPUModelNumber", "-1").c_str());
      cpus_[numa->os_index] = topo_.addNode(cpu);
    }
    if (cpus_.empty()) raise(ErrorCode::kSystem, "topology probe: hwloc reports no NUMA node");
    std::vector<int> ids = topo_.nodesOf(NodeKind::kCpu);
    for (size_t a = 0; a < ids.size(); ++a)
      for (size_t b = a + 1; b < ids.size(); ++b) {
        const Node& x = topo_.node(ids[a]);
        topo_.addLink(ids[a], ids[b], LinkKind::kSmp, smpBw(x.arch, x.vendor, x.model));
      }
  }

  static std::string info(hwloc_obj_t obj, const char* name, const char* otherwise = "") {
    const char* value = obj ? hwloc_obj_get_info_by_name(obj, name) : nullptr;
    return value ? value : otherwise;
  }

  // The CPU node of the NUMA node closest to an I/O object.
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
    if (io->type == HWLOC_OBJ_BRIDGE) {
      node.kind = NodeKind::kPciSwitch;
    } else if (pci.class_id >> 8 == 0x03 && (pci.vendor_id == kNvidia || pci.vendor_id == kAmd)) {
      node.kind = NodeKind::kGpu;
      node.inferred = "GPU found by PCI class: SM version and NVLinks not probed (no CUDA/NVML)";
    } else if (pci.class_id >> 8 == 0x02) {
      node.kind = NodeKind::kNic;
    } else {
      return;
    }
    readPcieLink(node);
    int id = topo_.addNode(node);
    topo_.addLink(parent, id, LinkKind::kPcie, pcieLaneBw(node.pciGts) * node.pciWidth);
    for (hwloc_obj_t child = io->io_first_child; child; child = child->next_sibling) {
      if (child->type != HWLOC_OBJ_OS_DEVICE)
        addIo(child, id);
      else if (node.kind == NodeKind::kNic)
        addPort(child, id);
    }
  }

  void readPcieLink(Node& node) {
    std::string dir = "/sys/bus/pci/devices/" + node.busId + "/";
    node.pciGts = pcieGts(readLine(dir + "current_link_speed")).value_or(kDefaultGts);
    node.pciWidth = std::atoi(readLine(dir + "current_link_width").c_str());
    if (node.pciWidth <= 0 || node.pciWidth > 32) node.pciWidth = kDefaultWidth;
  }

  void addPort(hwloc_obj_t os, int nic) {
    auto kind = os->attr->osdev.type;
    if (kind != HWLOC_OBJ_OSDEV_NETWORK && kind != HWLOC_OBJ_OSDEV_OPENFABRICS) return;
    if (kind == HWLOC_OBJ_OSDEV_OPENFABRICS) foundHca_ = true;
    Node port;
    port.kind = NodeKind::kNet;
    port.parent = nic;
    port.busId = port.name = os->name ? os->name : "net";
    int mbps = kind == HWLOC_OBJ_OSDEV_NETWORK
                   ? std::atoi(readLine("/sys/class/net/" + port.name + "/speed").c_str())
                   : 0;
    const Link& up = topo_.links()[topo_.linksFrom(nic).front()];
    if (mbps <= 0) port.inferred = "speed unknown: taken at its NIC's PCIe bandwidth";
    int id = topo_.addNode(port);
    topo_.addLink(nic, id, LinkKind::kNet, mbps > 0 ? netBw(mbps) : up.bw);
  }

  hwloc_topology_t hw_ = nullptr;
  Topology topo_;
  std::map<unsigned, int> cpus_;  // NUMA os index -> CPU node
  bool foundHca_ = false;
};

}  // namespace

Topology probeHost() {
  return HwlocProbe().run();
}

}  // namespace tutti::topology
