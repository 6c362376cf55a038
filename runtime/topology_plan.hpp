// The machine as the communicator sees it: the topology (TUTTI_TOPO_FILE, else the probe), loaded
// once per process; where this rank runs in it; and the CPU ring over the ranks ordered by
// package, NUMA node and core (or as TUTTI_RING_ORDER says), with its estimated bandwidth for the
// tuning model. The ring and chain collectives follow it (runtime/collectives/ring_view.hpp), the
// tree collectives the double binary tree over the same hosts and order.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "runtime/peer_info.hpp"
#include "runtime/settings.hpp"
#include "topology/topology.hpp"

namespace tutti::runtime {

// Loaded on first use and kept for the process: TUTTI_TOPO_FILE, else the probe of the CPUs (the
// PCI tree too when TUTTI_TOPO_DUMP_FILE asks for it: it is most of the probe's time). A bad
// TUTTI_TOPO_FILE is an error naming the variable and the file; a probe that fails is not
// (nullptr, with a warning).
const topology::Topology* hostTopology();
// The rings the topology plans (searchRings: NCCL's search) over those of host 0's GPUs that
// `busIds` name (PCI bus ids, lower case; those it lacks are left out), each GPU by its bus id;
// none where it has none of them.
std::vector<std::vector<std::string>> gpuRingsOf(const topology::Topology& topo,
                                                 const std::vector<std::string>& busIds);
// gpuRingsOf this host: hostTopology() where it is a file or holds the PCI tree, else a probe of
// the PCI tree once per process (the device channels' rings need it; a failed probe plans none,
// with a warning).
std::vector<std::vector<std::string>> hostGpuRings(const std::vector<std::string>& busIds);
// Fills in where this process is pinned (its CPU affinity: the package, NUMA node and core that
// all its allowed CPUs share, from the topology's hardware threads; -1 where they differ or the
// topology does not say, as NCCL XML lists none) and its host's link figures. Every rank plans from
// what all ranks published, so all agree on the plan.
void describePlace(PeerInfo& self);
// Writes hostTopology() to TUTTI_TOPO_DUMP_FILE once per process when the variable is set; a file
// that cannot be written draws a warning naming the variable.
void dumpTopology();

struct CpuRing {
  std::vector<int> order;     // ranks in ring order
  std::vector<int> position;  // position[rank]: where the rank sits in `order`
  bool given = false;         // the order was given (TUTTI_RING_ORDER), not planned
  const char* via = "";       // the slowest hop's kind: SHM, SYS (across CPUs), TCP, NET
  double bw = 0;              // GB/s: the slowest hop; 0 when there is no ring (one rank)
  // The tree collectives' double binary tree (topology::rankTree), indexed by rank: the ring cut
  // by host, hosts in the order the ring first reaches them.
  std::array<std::vector<topology::TreeNode>, 2> trees;
  int treeDepth =
      0;  // the deeper one's (topology::treeDepth): the tree all-reduce's cost counts it
};
// "0 2 1 3", for messages.
std::string formatRanks(const std::vector<int>& ranks);
// TUTTI_RING_ORDER's value as ranks: numbers separated by spaces or commas, none twice; empty
// when unset. Whether it names every rank is checked by planCpuRing, which knows how many there
// are. A malformed value is kInvalidArgument naming the variable.
std::vector<int> parseRingOrder(const std::string& text);
// Without `given`: hosts in order of their first rank, each host's ranks by package, NUMA node and
// core. With it: that order, which must hold each of 0..n-1 once (else kInvalidArgument naming
// TUTTI_RING_ORDER). Each hop's bandwidth is its transport's rate in the tuning table (shm_gbs,
// tcp_gbs), lowered by the topology where the hop crosses the CPU interconnect (ranks on
// different NUMA nodes) or the network (the slower host's NIC port). The trees group the ranks by
// host (PeerInfo::hostId) in ring order.
CpuRing planCpuRing(const std::vector<PeerInfo>& peers,
                    const transport::TransportSelection& transport, const Tuning& tuning,
                    const std::vector<int>& given = {});
// At INFO, one line per channel: "ring 0: 0 1 3 2 via SHM 5 GB/s" (" (TUTTI_RING_ORDER)" when
// given), each tree's parents by rank ("tree 1: parents 1 2 5 4 5 -", "-" at the root), then the
// topology's GPU rings when it has GPUs (over all of them; the device channels run rings over the
// GPUs in use: runtime/gpu/channel_rings.hpp).
void logChannels(const CpuRing& ring);

}  // namespace tutti::runtime
