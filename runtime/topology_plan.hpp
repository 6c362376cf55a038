// The machine as the communicator sees it: the topology (TUTTI_TOPO_FILE, else the probe), loaded
// once per process; where this rank runs in it; and the CPU ring over the ranks ordered by
// package, NUMA node and core, with its estimated bandwidth for the tuning model.
#pragma once

#include <string>
#include <vector>

#include "runtime/peer_info.hpp"
#include "topology/topology.hpp"

namespace tutti::runtime {

// What the CPU-driven transports move per direction when nothing slower is in the way (README,
// "Measured", 2-core VM): shared memory ~5 GB/s (a memory copy), TCP ~2 GB/s.
constexpr double kShmGBs = 5.0, kTcpGBs = 2.0;

// Loaded on first use and kept for the process: TUTTI_TOPO_FILE, else the probe of the CPUs (the
// PCI tree too when TUTTI_TOPO_DUMP_FILE asks for it: it is most of the probe's time). A bad
// TUTTI_TOPO_FILE is an error naming the variable and the file; a probe that fails is not
// (nullptr, with a warning).
const topology::Topology* hostTopology();
// Fills in where this process is pinned (its CPU affinity: the package, NUMA node and core that
// all its allowed CPUs share, from the topology's hardware threads; -1 where they differ or the
// topology does not say, as NCCL XML lists none) and its host's link figures. Every rank plans from
// what all ranks published, so all agree on the plan.
void describePlace(PeerInfo& self);
// Writes hostTopology() to TUTTI_TOPO_DUMP_FILE once per process when the variable is set; a file
// that cannot be written draws a warning naming the variable.
void dumpTopology();

struct CpuRing {
  std::vector<int> order;  // ranks in ring order
  const char* via = "";    // the slowest hop's kind: SHM, SYS (across CPUs), TCP, NET
  double bw = 0;           // GB/s: the slowest hop; 0 when there is no ring (one rank)
};
// Hosts in order of their first rank, each host's ranks by package, NUMA node and core. Each
// hop's bandwidth is its transport's rate, lowered by the topology where the hop crosses the CPU
// interconnect (ranks on different NUMA nodes) or the network (the slower host's NIC port).
CpuRing planCpuRing(const std::vector<PeerInfo>& peers, const std::string& transport);
// At INFO, one line per channel: "ring 0: 0 1 3 2 via SHM 5 GB/s", then the topology's GPU rings
// when it has GPUs (what GPU buffers will use).
void logChannels(const CpuRing& ring);

}  // namespace tutti::runtime
