// The communicator's device side: whether and how its kernels run on the ranks' GPUs (the
// kernel plan, from every rank's GPU facts), and the ring of its device kernels (channel rings
// over the GPUs, link proxies between hosts). Both are collective, settled at first use.
#include "base/log.hpp"
#include "runtime/communicator.hpp"
#include "runtime/gpu/channel_rings.hpp"
#include "runtime/topology_plan.hpp"

namespace tutti::runtime {

gpu::DeviceRing& Communicator::deviceRing(int device) {
  if (!deviceRing_) {
    const Deadline deadline = Deadline::after(timeout());
    const gpu::KernelPlan& plan = kernelPlan(device);
    gpu::RingMembers members{tag_, rank_, {}, {}, {}, plan.facts, {}, device, plan.channels, {}};
    for (const PeerInfo& peer : peers_) {
      members.pids.push_back(static_cast<pid_t>(peer.pid));
      members.hosts.push_back(peer.hostId);
    }
    for (const std::vector<topology::TreeNode>& tree : cpuRing_.trees) {
      std::vector<int>& parents = members.treeParents.emplace_back();
      for (const topology::TreeNode& node : tree) parents.push_back(node.parent);
    }
    gpu::ChannelRings rings = gpu::planChannelRings(plan.facts, members.hosts, cpuRing_.order,
                                                    cpuRing_.given, gpuRings(plan, members.hosts));
    if (!rings.why.empty() && rank_ == 0)
      log::info("gpu: every device channel runs the CPU ring: {}", rings.why);
    members.orders = std::move(rings.orders);
    const auto checkPeers = [this] {
      throwIfFailed();
      if (const auto trouble = peerWatch_->look(-1, true))
        throw describeTrouble(*trouble, peers_[static_cast<size_t>(trouble->peer)],
                              fmt::format("rank {}: connecting the device ring", rank_),
                              "for its link proxy");
    };
    members.proxySockets = {
        job_.secret,
        [this] {
          return bootstrap::chooseAddress(settings_.socketInterfaces, &job_.rendezvous).host();
        },
        [this, deadline, checkPeers](const std::string& mine) {
          return bootstrap::allgather(*job_.store, tag_ + "/gpu-proxies", rank_, size(), mine,
                                      deadline, checkPeers);
        },
        checkPeers};
    deviceRing_ = std::make_unique<gpu::DeviceRing>(members, stagingPool_, deadline);
    deviceRing_->setDrainWait(timeout());
  }
  return *deviceRing_;
}

std::vector<std::vector<std::string>> Communicator::gpuRings(
    const gpu::KernelPlan& plan, const std::vector<std::string>& hosts) {
  if (!gpu::ringsFromGpus(hosts, cpuRing_.given)) return {};
  std::vector<std::string> busIds;
  for (const gpu::GpuFacts& facts : plan.facts) busIds.push_back(facts.busId);
  gpu::GpuRings mine;
  try {
    mine = hostGpuRings(busIds);
  } catch (const Error& error) {  // the others still hear from this rank
    log::warn("gpu: rank {}: no rings over the GPUs from the topology: {}", rank_, error.what());
  }
  const std::vector<std::string> records = bootstrap::allgather(
      *job_.store, tag_ + "/gpu-rings", rank_, size(), gpu::encodeGpuRings(mine),
      Deadline::after(timeout()), [this] { throwIfFailed(); });
  const int first = cpuRing_.order[0];
  return gpu::decodeGpuRings(records[static_cast<size_t>(first)], rank_, first);
}

const gpu::KernelPlan& Communicator::kernelPlan(int device) {
  if (kernelPlan_) return *kernelPlan_;
  gpu::GpuFacts mine;
  try {
    mine = gpu::gpuFacts(device);
  } catch (const Error& error) {
    mine.unusable = error.what();  // the others still hear from this rank, and stage with it
  }
  try {
    const std::vector<std::string> records = bootstrap::allgather(
        *job_.store, tag_ + "/gpu-facts", rank_, size(), gpu::encodeGpuFacts(mine),
        Deadline::after(timeout()), [this] { throwIfFailed(); });
    std::vector<gpu::GpuFacts> facts;
    std::vector<gpu::RankProcess> processes;
    for (int r = 0; r < size(); ++r) {
      facts.push_back(gpu::decodeGpuFacts(records[static_cast<size_t>(r)], rank_, r));
      const PeerInfo& peer = peers_[static_cast<size_t>(r)];
      processes.push_back({peer.machine(), peer.hostId, peer.pid});
    }
    kernelPlan_ = gpu::planKernels(facts, processes, settings_.gpuChannels);
  } catch (const Error& error) {
    recordFailure(error);  // collective, once: a rank that misses it is out of step for good
    throw;
  }
  if (!kernelPlan_->declined.empty() && rank_ == 0)
    log::warn("gpu: device buffers are staged through host memory, not run as device kernels: {}",
              kernelPlan_->declined);
  return *kernelPlan_;
}

}  // namespace tutti::runtime
