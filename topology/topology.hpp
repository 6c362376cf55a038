// topology: the machine as a graph. Nodes are CPUs (one per NUMA node), PCI switches, GPUs,
// NVSwitches, NICs and their network ports; links carry a kind and a bandwidth in GB/s per
// direction. From the graph come the best path between any two nodes (type as NCCL names it,
// bottleneck bandwidth), the ring channels inside a host, and the rings and double binary trees
// across hosts. The graph is probed (hwloc, libibverbs, NVML) or read from NCCL's topology XML,
// hwloc's XML or tutti's own JSON export. This is the layer's one API header: tools and the
// runtime include only this.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "topology/double_tree.hpp"
#include "topology/rdma_nics.hpp"

namespace tutti::topology {

enum class NodeKind { kCpu, kPciSwitch, kGpu, kNvSwitch, kNic, kNet };
enum class LinkKind { kNvLink, kPcie, kSmp, kNet, kC2C };

// Path types, closest first, with NCCL's meanings:
//   LOC  the node itself
//   NVL  NVLink, directly or through NVSwitches
//   NVB  NVLink through an intermediate GPU
//   C2C  a GPU's chip-to-chip link to its CPU (Grace)
//   PIX  at most one PCIe switch
//   PXB  several PCIe switches, without crossing a CPU
//   P2C  a GPU over C2C to its CPU, then PCIe to a NIC of that CPU: NCCL's rule, for the NICs
//        nearest the GPU only (NCCL's ncclTopoComputePaths)
//   PHB  through a CPU's PCIe host bridge (same NUMA node)
//   SYS  across the interconnect between CPUs (SMP: QPI/UPI, Infinity Fabric)
//   NET  through the network (another host)
enum class PathType { kLoc, kNvl, kNvb, kC2c, kPix, kPxb, kP2c, kPhb, kSys, kNet };

const char* nodeKindName(NodeKind kind);
const char* linkKindName(LinkKind kind);
const char* pathTypeName(PathType type);

struct Node {
  NodeKind kind = NodeKind::kCpu;
  std::string busId;  // PCI bus id, lower case; CPUs: "numa<N>"; NVSwitch: "nvswitch"
  int host = 0;       // index into Topology::hosts()
  int parent = -1;    // tree parent (CPU, switch, or the NIC of a NET port); -1 at a root
  int index = -1;     // ordinal among the nodes of its kind in its host (GPU 0, 1, ...)
  // PCI devices: class code, and the link to the parent (rate in GT/s, lanes).
  uint32_t pciClass = 0;
  double pciGts = 0;
  int pciWidth = 0;
  // CPU
  int numaId = -1;
  int package = -1;  // os index of its package (socket); -1 unknown (NCCL XML)
  std::string arch, vendor;
  int family = -1, model = -1;
  // GPU
  int sm = 0;  // 0: unknown
  int dev = -1, rank = -1;
  // NET port
  std::string name, guid;
  int port = 0;
  std::string linkLayer;  // "IB" or "Ethernet" (RoCE) for an HCA port; empty when unknown
  // What the importer inferred where the file was silent (empty if nothing).
  std::string inferred;
};

// A directed link; every physical link is two of them, one per direction.
struct Link {
  int from = -1, to = -1;
  LinkKind kind = LinkKind::kPcie;
  double bw = 0;  // GB/s in this direction
  int count = 1;  // NVLinks: number of lanes bundled
};

// A hardware thread, where a rank may run (from hwloc; NCCL XML lists none).
struct Pu {
  int os = -1;       // the OS's CPU number (sched_getcpu)
  int core = -1;     // hwloc's logical index of its core, unique in the host
  int package = -1;  // os index of its package
  int cpu = -1;      // node id of its CPU (NUMA node)
};

struct Path {
  PathType type = PathType::kNet;
  double bw = 0;           // bottleneck bandwidth, GB/s
  std::vector<int> links;  // directed link ids from source to destination; empty across hosts
};

class Topology {
 public:
  int addHost(std::string hash);
  int addNode(Node node);
  // Adds one directed link and returns its id. A second link of the same kind between the same
  // nodes joins the first: bandwidths and counts add (NVLinks to several NVSwitches).
  int addDirectedLink(int from, int to, LinkKind kind, double bw, int count = 1);
  // Adds both directions.
  void addLink(int a, int b, LinkKind kind, double bw, int count = 1);
  // Computes every path; call once the graph is complete (the importer does).
  void computePaths();

  const std::vector<std::string>& hosts() const { return hosts_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const Node& node(int id) const { return nodes_.at(id); }
  const std::vector<Link>& links() const { return links_; }
  const std::vector<int>& linksFrom(int node) const { return out_.at(node); }
  // Node ids of one kind, in index order; host -1: every host.
  std::vector<int> nodesOf(NodeKind kind, int host = -1) const;
  // -1 when absent.
  int findBusId(int host, std::string_view busId) const;
  // Best path; computePaths() must have run.
  const Path& path(int from, int to) const;

  // Human-readable notes on what the importer inferred or ignored.
  std::vector<std::string> notes;
  // Host 0's hardware threads, in OS order; empty when the source does not list them.
  std::vector<Pu> pus;

 private:
  std::vector<std::string> hosts_;
  std::vector<Node> nodes_;
  std::vector<Link> links_;
  std::vector<std::vector<int>> out_;
  // Paths are kept per host, and across hosts as one per network bandwidth: a file or --hosts
  // of thousands of hosts held every pair of their nodes (4096 hosts: tens of GB).
  std::vector<std::vector<int>> hostNodes_;            // each host's node ids, in id order
  std::vector<int> local_;                             // a node's position in its host's list
  std::vector<std::vector<std::vector<Path>>> paths_;  // [host][local from][local to]
  std::vector<Path> netPaths_;                         // across hosts, by bandwidth ascending
  std::vector<int> netPath_;                           // a node's netPaths_ entry to the network
};

// NCCL topology XML. Errors (kInvalidArgument) name the file, the line and what was wrong.
Topology loadXmlFile(const std::string& path);
Topology parseXml(std::string_view text, const std::string& name);
// The same format back (NCCL reads it too); what the importer inferred is written explicitly.
std::string toXml(const Topology& topo);
void saveXmlFile(const Topology& topo, const std::string& path);

// hwloc's XML (`lstopo --of xml`): packages, NUMA nodes, cores, the PCI tree and OS devices, read
// by hwloc itself and turned into a graph as the probe does; PCIe links from hwloc's link speed.
Topology loadHwlocXmlFile(const std::string& path);
Topology parseHwlocXml(std::string_view text, const std::string& name);
// The graph as JSON: hosts, notes, nodes, links, hardware threads and each host's ring channels.
std::string toJson(const Topology& topo);
// What toJson wrote, back: the same graph (exporting it gives the same JSON). Errors
// (kInvalidArgument) name the file and a JSON path (nodes[3].kind), or a line and column.
Topology parseJson(std::string_view text, const std::string& name);
Topology loadJsonFile(const std::string& path);
// JSON (the first byte past white space is '{' or '['), else NCCL XML or hwloc XML, told apart
// by the root element (<system> or <topology>).
Topology loadTopologyFile(const std::string& path);
// NCCL XML, or JSON when the name ends in ".json".
void saveTopologyFile(const Topology& topo, const std::string& path);

// This machine, probed with hwloc (CPUs, cores, PCI tree, GPUs and NICs by PCI class, network
// ports), libibverbs (HCA ports: speed, state, GUID, link layer) and NVML/CUDA (GPU SM versions
// and NVLinks), the last two loaded with dlopen. No GPU or no HCA is normal: logged at INFO.
// kCpus stops at the CPUs and their hardware threads: hwloc's I/O discovery is most of the
// probe's time, and ranks that only need their place skip it.
enum class ProbeScope { kFull, kCpus };
Topology probeHost(ProbeScope scope = ProbeScope::kFull);

// Ring channels inside one host.
struct Channel {
  std::vector<int> ring;           // GPU node ids in ring order (across hosts: host by host)
  PathType type = PathType::kLoc;  // the farthest hop
  double bw = 0;                   // GB/s reserved on every link it uses
  int rail = -1;                   // across hosts: the NIC index it enters every host by
  int exitRail = -1;  // across hosts: the NIC index it leaves every host by (rail, or crossNic's)
};
struct RingPlan {
  std::vector<Channel> channels;
  double totalBw = 0;
};
struct RingSearchOptions {
  int maxChannels = 16;
  std::vector<int> gpus = {};  // the GPU node ids to ring (a communicator's); none: the host's
};
// Maximises the bottleneck bandwidth with a bandwidth-reservation search, closest path types
// first (NVLink before PCIe). Empty plan for a host without GPUs.
RingPlan searchRings(const Topology& topo, int host = 0, const RingSearchOptions& options = {});
// "ring 0: 0 1 3 2 via NVL 40 GB/s" (GPU indices); across hosts "ring 0: 0/1 0/0 1/1 1/0 via
// NET 12 GB/s on NIC 0" (host/GPU), "... on NIC 0 in, NIC 1 out" where it leaves by another NIC.
std::string formatChannel(const Topology& topo, int number, const Channel& channel);

// N copies of host 0 of `one`, joined by their network (paths computed): the plan of N hosts.
Topology replicateHosts(const Topology& one, int hosts);

// Rings across every host of `topo` (a fused file's real hosts, or replicateHosts' copies),
// rail-aligned: channel c enters each host by NIC `rail` and leaves it by NIC `exitRail` (a NIC's
// first network port, or the NIC itself where the file lists no port), the same on every host:
// c itself, or as NCCL's crossNic pairs channels, c's pair (c ^ 1) where that brings its entry and
// exit closer to their NICs. Inside each host it enters at a GPU close to the one NIC and leaves
// from a GPU close to the other, following one of the host's rings in between. One channel per
// NIC. Each channel's bandwidth is its narrowest share: every link's bandwidth divided by the
// number of channels crossing it. Empty when a host with GPUs has no NIC or no in-host ring.
RingPlan searchNetRings(const Topology& topo, const RingSearchOptions& options = {});

// Double binary tree across hosts: binaryTree (double_tree.hpp) over the hosts with GPUs. Inside
// each host the GPUs form a chain whose head talks to the network through NIC t (tree t).
struct Tree {
  std::vector<TreeNode> hosts;           // indexed by host: parent and children are host indices
  std::vector<std::vector<int>> chains;  // per host: GPU node ids, head first
  int rail = 0;                          // NIC index used on every host
  double bw = 0;                         // GB/s: narrowest chain hop or head-to-NIC path
};
struct TreePlan {
  std::vector<Tree> trees;  // two, or none when a host with GPUs has no NIC or no in-host ring
};
TreePlan searchTrees(const Topology& topo, const RingSearchOptions& options = {});
// "tree 0 (NIC 0, 12 GB/s):" then per host "  host 3: up 2 down 1 5 chain 1 0 3 2" (GPU indices).
std::string formatTreeChannel(const Topology& topo, int number, const Tree& tree);

// The all-reduce cost of each algorithm the topology plans, over one rank per GPU of every host
// with GPUs: time(bytes) = latency + bytes / algorithm bandwidth, with the bandwidth taken from
// the planned channels (searchRings or searchNetRings, searchTrees) and the latency from their
// path types (cost_model.cpp). Bus bandwidth is nccl-tests' busbw: bytes x 2(n-1)/n over time.
struct AlgorithmCost {
  std::string name;  // "ring", "tree"
  int channels = 0;  // rings or trees it runs at once
  double latencyUs = 0;
  double algBw = 0;  // GB/s: bytes over time, latency aside
  double busBw = 0;  // GB/s: nccl-tests' busbw, latency aside
  double timeUs(double bytes) const;
  double busBwAt(double bytes, int ranks) const;  // nccl-tests' busbw at this size
};
struct AllReduceCosts {
  int ranks = 0, hosts = 0;
  std::vector<AlgorithmCost> algorithms;  // the ring; across hosts also the double binary tree
  // The quickest at this size; null when there is nothing to price (fewer than 2 ranks).
  const AlgorithmCost* best(double bytes) const;
};
AllReduceCosts priceAllReduce(const Topology& topo, const RingSearchOptions& options = {});

// CPU-only hosts: ranks ordered by package, NUMA node, core, then rank.
struct RankPlace {
  int rank = 0, package = 0, numa = 0, core = 0;
};
std::vector<int> cpuRingOrder(std::vector<RankPlace> places);
// Where a process running on OS CPU `os` sits in host 0 (rank left 0); -1 fields where the
// topology does not say (no PU table, or the CPU is not in it).
RankPlace placeOf(const Topology& topo, int os);

}  // namespace tutti::topology
