// A communicator's device side: the device its device buffers are bound to, the pinned host
// memory they are staged in, whether and how its kernels run on the ranks' GPUs (the kernel plan,
// from every rank's GPU facts) and the ring of its device kernels (channel rings over the GPUs,
// link proxies between hosts). The plan and the ring are collective, settled at first use, by the
// thread that issues the operations.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/failure_state.hpp"
#include "runtime/gpu/device_ring.hpp"
#include "runtime/gpu/gpu_sharing.hpp"
#include "runtime/gpu/pinned_pool.hpp"
#include "runtime/job_bootstrap.hpp"
#include "runtime/membership.hpp"
#include "runtime/operation_timeout.hpp"
#include "runtime/peer_watch.hpp"
#include "runtime/settings.hpp"

namespace tutti::runtime {

class DeviceSide {
 public:
  // What it uses of its communicator, which outlives it.
  struct Links {
    const Membership& members;
    const JobBootstrap& job;
    const Settings& settings;
    const OperationTimeout& timeout;
    const FailureState& failure;
    PeerWatch& peerWatch;
    // The communicator's failure path (announced to the peers, dumped).
    std::function<void(const Error&)> recordFailure;
  };
  explicit DeviceSide(Links links) : links_(std::move(links)) {}
  // The ring goes first, then the pool once streams have returned its buffers (bounded by the
  // communicator's timeout).
  ~DeviceSide();
  DeviceSide(const DeviceSide&) = delete;
  DeviceSide& operator=(const DeviceSide&) = delete;

  // The device of this communicator's device buffers: the first one binds it, and this returns
  // the bound device (another than `device` when a different one was bound first).
  int bindDevice(int device) {
    int unbound = -1;
    device_.compare_exchange_strong(unbound, device);
    return device_.load();
  }
  // Pinned host memory in which device buffers are staged.
  gpu::PinnedPool& stagingPool() { return stagingPool_; }
  // The ring of the device kernels on `device` (device_path.hpp), connected on first use:
  // collective over the ranks, which all come to it with their first collective that runs as
  // kernels.
  gpu::DeviceRing& ring(int device);
  // The ring if a collective connected it already, else nullptr (nothing collective happens).
  gpu::DeviceRing* connectedRing() { return ring_.get(); }
  // Whether and with how many channels the device kernels run on the ranks' GPUs (gpu_sharing.hpp):
  // settled at the first call, collective over the ranks, which exchange their GPU's facts
  // through the store.
  const gpu::KernelPlan& kernelPlan(int device);
  // Whether this rank's stream forms wait for their stream on the host and run as the blocking
  // forms do, rather than order a staged operation on the stream behind a stream wait: where
  // another rank is a thread of this process on this rank's GPU, their streams share one
  // context's hardware queues, in which one rank's stream wait can hold back the very copy that a
  // peer's part of the operation waits for (on an H200 such ranks hung now and then; docs/gpu.md,
  // "Ranks sharing a GPU"). The ranks' GPUs are known from the kernels' plan, made at the first
  // device collective that may run as kernels (TUTTI_GPU_PATH=kernels): until then, and with
  // TUTTI_GPU_PATH=staged, the stream forms keep their stream waits, hazard and all.
  bool hostOrdersStreams() const {
    return kernelPlan_ &&
           kernelPlan_->sharesGpuWithThread[static_cast<size_t>(links_.members.rank())];
  }

 private:
  // The rings over the ranks' GPUs that the first rank of the CPU ring's topology plans, collective
  // where the channels follow the GPUs' rings (gpu::ringsFromGpus), none elsewhere.
  std::vector<std::vector<std::string>> gpuRings(const gpu::KernelPlan& plan,
                                                 const std::vector<std::string>& hosts);
  std::vector<std::string> allgather(const std::string& key, const std::string& mine,
                                     const Deadline& deadline,
                                     const std::function<void()>& check) const;

  Links links_;
  std::atomic<int> device_{-1};
  gpu::PinnedPool stagingPool_;
  std::unique_ptr<gpu::DeviceRing> ring_;  // holds leases of stagingPool_
  std::optional<gpu::KernelPlan> kernelPlan_;
};

}  // namespace tutti::runtime
