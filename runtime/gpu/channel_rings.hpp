// The rings a communicator's device channels run. NCCL gives each channel a ring of its own,
// planned from the GPUs' links: on an NVLink mesh, rings over different links carry more than one
// ring on every channel. Inside a host, tutti takes the rings the topology plans over the ranks'
// GPUs (hostGpuRings: NCCL's search). Each rank plans them from its own topology and publishes
// them; all take those of the first rank of the CPU ring, so all agree even where their topology
// files differ.
#pragma once

#include <string>
#include <vector>

#include "runtime/gpu/gpu_sharing.hpp"

namespace tutti::runtime::gpu {

// Rings over GPUs, each GPU by its PCI bus id (GpuFacts::busId).
using GpuRings = std::vector<std::vector<std::string>>;

// The record passed to the other ranks, and back: kRemote naming `from` (as seen by `rank`) for a
// record that is short, long or out of range.
std::string encodeGpuRings(const GpuRings& rings);
GpuRings decodeGpuRings(const std::string& bytes, int rank, int from);

struct ChannelRings {
  // Channel c runs orders[c % orders.size()], each the ranks in ring order.
  std::vector<std::vector<int>> orders;
  std::string why;  // why every channel runs the CPU ring; "" where the GPUs' rings are used
};

// Whether the ranks (`hosts`, [rank]) plan their channels' rings from the GPUs: all on one host,
// the ring not `given` (TUTTI_RING_ORDER). Where not, every channel runs the CPU ring, and the
// ranks exchange no rings: the link proxies between hosts carry one ring.
bool ringsFromGpus(const std::vector<std::string>& hosts, bool given);

// For each of `rings`, the ranks ordered by where their GPU (facts[rank].busId) sits in it, the
// ranks of one GPU together in `cpuOrder`'s order. The CPU ring `cpuOrder` on every channel
// instead where !ringsFromGpus, where there are no rings, or where a rank's GPU is in none of them
// (a topology of another machine). kInternal when the sizes disagree.
ChannelRings planChannelRings(const std::vector<GpuFacts>& facts,
                              const std::vector<std::string>& hosts,
                              const std::vector<int>& cpuOrder, bool given, const GpuRings& rings);

}  // namespace tutti::runtime::gpu
