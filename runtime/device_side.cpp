#include "runtime/device_side.hpp"

#include "base/log.hpp"
#include "runtime/gpu/channel_rings.hpp"
#include "runtime/topology_plan.hpp"

namespace tutti::runtime {
namespace {

gpu::RankProcess processOf(const PeerInfo& peer) {
  return {peer.machine(), peer.hostId, peer.pid};
}

}  // namespace

DeviceSide::~DeviceSide() {
  ring_.reset();
  // Streams may still hold staging buffers (their last host function returns them).
  stagingPool_.close(links_.timeout.get());
}

std::vector<std::string> DeviceSide::allgather(const std::string& key, const std::string& mine,
                                               const Deadline& deadline,
                                               const std::function<void()>& check) const {
  const Membership& members = links_.members;
  return bootstrap::allgather(*links_.job.store, members.tag() + "/" + key, members.rank(),
                              members.size(), mine, deadline, check);
}

gpu::DeviceRing& DeviceSide::ring(int device) {
  if (ring_) return *ring_;
  const Membership& self = links_.members;
  const int rank = self.rank();
  const Deadline deadline = Deadline::after(links_.timeout.get());
  const gpu::KernelPlan& plan = kernelPlan(device);
  gpu::RingMembers members{self.tag(), rank, {}, {}, {}, plan.facts, {}, device, plan.channels, {}};
  for (const PeerInfo& peer : self.peers()) {
    members.pids.push_back(static_cast<pid_t>(peer.pid));
    members.hosts.push_back(peer.hostId);
  }
  const CpuRing& cpuRing = self.ring();
  for (const std::vector<topology::TreeNode>& tree : cpuRing.trees) {
    std::vector<int>& parents = members.treeParents.emplace_back();
    for (const topology::TreeNode& node : tree) parents.push_back(node.parent);
  }
  gpu::ChannelRings rings = gpu::planChannelRings(plan.facts, members.hosts, cpuRing.order,
                                                  cpuRing.given, gpuRings(plan, members.hosts));
  if (!rings.why.empty() && rank == 0)
    log::info("gpu: every device channel runs the CPU ring: {}", rings.why);
  members.orders = std::move(rings.orders);
  const auto checkPeers = [this, rank] {
    links_.failure.throwIfFailed();
    if (const auto trouble = links_.peerWatch.look(-1, true))
      throw describeTrouble(*trouble, links_.members.peer(trouble->peer),
                            fmt::format("rank {}: connecting the device ring", rank),
                            "for its link proxy");
  };
  members.proxySockets = {links_.job.secret,
                          [this] {
                            return bootstrap::chooseAddress(links_.settings.socketInterfaces,
                                                            &links_.job.rendezvous)
                                .host();
                          },
                          [this, deadline, checkPeers](const std::string& mine) {
                            return allgather("gpu-proxies", mine, deadline, checkPeers);
                          },
                          checkPeers};
  ring_ = std::make_unique<gpu::DeviceRing>(members, stagingPool_, deadline);
  ring_->setDrainWait(links_.timeout.get());
  return *ring_;
}

std::vector<std::vector<std::string>> DeviceSide::gpuRings(const gpu::KernelPlan& plan,
                                                           const std::vector<std::string>& hosts) {
  const CpuRing& cpuRing = links_.members.ring();
  if (!gpu::ringsFromGpus(hosts, cpuRing.given)) return {};
  std::vector<std::string> busIds;
  for (const gpu::GpuFacts& facts : plan.facts) busIds.push_back(facts.busId);
  const int rank = links_.members.rank();
  gpu::GpuRings mine;
  try {
    mine = hostGpuRings(busIds);
  } catch (const Error& error) {  // the others still hear from this rank
    log::warn("gpu: rank {}: no rings over the GPUs from the topology: {}", rank, error.what());
  }
  const std::vector<std::string> records =
      allgather("gpu-rings", gpu::encodeGpuRings(mine), Deadline::after(links_.timeout.get()),
                [this] { links_.failure.throwIfFailed(); });
  const int first = cpuRing.order[0];
  return gpu::decodeGpuRings(records[static_cast<size_t>(first)], rank, first);
}

const gpu::KernelPlan& DeviceSide::kernelPlan(int device) {
  if (kernelPlan_) return *kernelPlan_;
  const Membership& self = links_.members;
  gpu::GpuFacts mine;
  try {
    mine = gpu::gpuFacts(device);
  } catch (const Error& error) {
    mine.unusable = error.what();  // the others still hear from this rank, and stage with it
  }
  try {
    const std::vector<std::string> records =
        allgather("gpu-facts", gpu::encodeGpuFacts(mine), Deadline::after(links_.timeout.get()),
                  [this] { links_.failure.throwIfFailed(); });
    std::vector<gpu::GpuFacts> facts;
    std::vector<gpu::RankProcess> processes;
    for (int r = 0; r < self.size(); ++r) {
      facts.push_back(gpu::decodeGpuFacts(records[static_cast<size_t>(r)], self.rank(), r));
      processes.push_back(processOf(self.peer(r)));
    }
    kernelPlan_ = gpu::planKernels(facts, processes, links_.settings.gpuChannels);
  } catch (const Error& error) {
    links_.recordFailure(error);  // collective, once: a rank that misses it is out of step for good
    throw;
  }
  if (!kernelPlan_->declined.empty() && self.rank() == 0)
    log::warn("gpu: device buffers are staged through host memory, not run as device kernels: {}",
              kernelPlan_->declined);
  return *kernelPlan_;
}

}  // namespace tutti::runtime
