// A communicator: this rank's view of a group of ranks, with a connection to every peer, the
// engine that runs its operations in order, and its error state. The first failure is kept and
// fails every later operation with the same message.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/bootstrap/bootstrap.hpp"
#include "runtime/connections.hpp"
#include "runtime/engine.hpp"
#include "runtime/failure_state.hpp"
#include "runtime/gpu/device_ring.hpp"
#include "runtime/gpu/gpu_sharing.hpp"
#include "runtime/gpu/pinned_pool.hpp"
#include "runtime/group_view.hpp"
#include "runtime/observe/flight_recorder.hpp"
#include "runtime/peer_info.hpp"
#include "runtime/peer_watch.hpp"
#include "runtime/settings.hpp"
#include "runtime/topology_plan.hpp"
#include "transport/transport.hpp"

namespace tutti::runtime {

// What a world and the communicators split from it share: the store, what keeps it served, the
// rendezvous address (TCP listens on the interface that routes there) and the job secret.
struct JobBootstrap {
  std::shared_ptr<bootstrap::Store> store;
  std::shared_ptr<bootstrap::StoreServer> storeServer;  // when this rank hosts the rendezvous
  SockAddr rendezvous;
  Secret secret;
};

// What a split may set for the new communicator instead of inheriting it
// (tutti_comm_split_config).
struct ChildConfig {
  std::optional<std::string> socketInterfaces;  // Settings::socketInterfaces' names
};

class Communicator {
 public:
  // The collective part of every init: transports chosen per peer, addresses exchanged through
  // the store under `tag`, connections opened. peers[i] describes the rank that will be rank i.
  // The ring follows `ringOrder` (this communicator's ranks) when given, else the plan from the
  // peers' places (planCpuRing).
  static std::unique_ptr<Communicator> create(JobBootstrap job, std::string tag, int rank,
                                              std::vector<PeerInfo> peers, const Settings& settings,
                                              const std::vector<int>& ringOrder);
  ~Communicator();

  int rank() const { return rank_; }
  int size() const { return static_cast<int>(peers_.size()); }
  int localRank() const { return localRank_; }
  int localSize() const { return localSize_; }
  // More ranks on this host than cores to run them: waiting must not spin.
  bool oversubscribed() const { return oversubscribed_; }
  // The ranks' ring by CPU locality (or TUTTI_RING_ORDER) and its estimated bandwidth (the tuning
  // model's beta); the ring and chain collectives follow it.
  const CpuRing& cpuRing() const { return cpuRing_; }
  const PeerInfo& peer(int rank) const { return peers_[static_cast<size_t>(rank)]; }
  // What its algorithms see of it (group_view.hpp).
  GroupView view() { return {rank_, size(), *connections_, peers_, cpuRing_, settings_}; }
  const Settings& settings() const { return settings_; }
  // "auto", "ring", "tree", "oneshot" or "direct" (kInvalidArgument otherwise); ordered with the
  // operations.
  void setAlgorithm(const std::string& algorithm);
  // How long a wait of this communicator's operations (and of split) may stall before it fails
  // with kTimeout: settings().timeout until setTimeout changes it. Local to this rank. Any thread
  // may set it while the engine runs; a wait reads it when its stall begins, so operations that
  // start after the call use it and a wait already stalled keeps the bound it began with.
  std::chrono::milliseconds timeout() const {
    return std::chrono::milliseconds(timeoutMs_.load(std::memory_order_relaxed));
  }
  // 1 ms to TUTTI_TIMEOUT's maximum (kInvalidArgument otherwise, naming the value).
  void setTimeout(std::chrono::milliseconds timeout);
  const std::string& tag() const { return tag_; }
  // The world's tag, shared by every communicator split from it: names the job in dumps.
  std::string jobId() const { return tag_.substr(0, tag_.find('.')); }
  // Every peer's connection, whatever its transport.
  Connections& connections() { return *connections_; }
  const Connections& connections() const { return *connections_; }
  const char* transportTo(int peer) const { return connections_->transportTo(peer); }
  transport::SendConn& sendTo(int peer) { return connections_->sendTo(peer); }
  transport::RecvConn& recvFrom(int peer) { return connections_->recvFrom(peer); }
  void progress() { connections_->progress(); }
  bool sendsPending() const { return connections_->sendsPending(); }
  int wakeFd() const { return connections_->wakeFd(); }

  Engine& engine() { return *engine_; }
  uint64_t nextSequence() { return advance(sequence_); }
  uint64_t lastSequence() const { return sequence_.load(std::memory_order_relaxed); }
  // Collectives issued so far, counted apart from send/recv, which only some ranks make: the
  // number every rank agrees on for the same call (TUTTI_CHECK_CALLS compares it).
  uint64_t nextCollective() { return advance(collectives_); }
  uint64_t lastCollective() const { return collectives_.load(std::memory_order_relaxed); }
  FlightRecorder& recorder() { return *recorder_; }
  const FlightRecorder& recorder() const { return *recorder_; }

  // Error state: the first failure wins; later operations fail with it at once. The first
  // failure is announced to the peers and dumps the flight recorder (TUTTI_DUMP_DIR).
  void recordFailure(const Error& error);
  std::optional<Error> failure() const { return failure_.failure(); }
  void throwIfFailed() const { failure_.throwIfFailed(); }
  // Aborts this rank's operations and tells the peers (PeerWatch::announce), whose waits then fail
  // naming this rank.
  void abort();
  bool aborted() const { return failure_.aborted(); }
  // What the peers said and did: dead, failed, aborted or left (peer_watch.hpp).
  PeerWatch& peerWatch() { return *peerWatch_; }

  // The device of this communicator's device buffers: the first one binds it, and this returns
  // the bound device (another than `device` when a different one was bound first).
  int bindDevice(int device) {
    int unbound = -1;
    device_.compare_exchange_strong(unbound, device);
    return device_.load();
  }
  // Pinned host memory in which device buffers are staged.
  gpu::PinnedPool& stagingPool() { return stagingPool_; }
  // The ring of this communicator's device kernels on `device` (device_path.hpp), connected on
  // first use: collective over the ranks, which all come to it with their first collective that
  // runs as kernels. Called by the thread that issues the operations.
  gpu::DeviceRing& deviceRing(int device);
  // The ring if a collective connected it already, else nullptr (nothing collective happens).
  gpu::DeviceRing* connectedDeviceRing() { return deviceRing_.get(); }
  // Whether and with how many channels the device kernels run on the ranks' GPUs (gpu_sharing.hpp):
  // settled at the first call, collective over the ranks, which exchange their GPU's facts
  // through the store. Called by the thread that issues the operations.
  const gpu::KernelPlan& kernelPlan(int device);
  // The rings over the ranks' GPUs that the first rank of the CPU ring's topology plans, collective
  // where the channels follow the GPUs' rings (gpu::ringsFromGpus), none elsewhere.
  std::vector<std::vector<std::string>> gpuRings(const gpu::KernelPlan& plan,
                                                 const std::vector<std::string>& hosts);
  // The rank a receive from any source looks at first: the one after the rank the last one took
  // from, so that senders whose messages wait together are taken in turn. Operations run one at
  // a time, so only the running one uses it.
  int& anySourceStart() { return anySourceStart_; }

  // Ranks with the same color form a new communicator ordered by (key, rank); nullptr for a
  // negative color. Collective over this communicator. Its ring is planned from its members'
  // places, or, when this communicator's order was given (TUTTI_RING_ORDER), is that order with
  // the other ranks left out.
  std::unique_ptr<Communicator> split(int color, int key, const ChildConfig& config = {});
  // Refuses a config this rank cannot honour (kInvalidArgument: socket interfaces that match
  // none here). Checked before the split runs on the engine, where an error fails this one.
  void checkChildConfig(const ChildConfig& config) const;
  // The survivors' communicator (tutti_comm_shrink): every rank of this one but those excluded,
  // renumbered in order. The callers agree on the excluded ranks over the store
  // (shrink_agreement.hpp): the union of every caller's `excluded` (checked, sorted) and, with
  // `excludeGone`, of the ranks each finds gone. Collective over the survivors. Once it
  // succeeds, this communicator is retired: every later operation fails saying it was shrunk.
  std::unique_ptr<Communicator> shrink(const std::vector<int>& excluded, bool excludeGone);
  // A join token for growing this communicator (tutti_comm_grow_id): the rendezvous, the job
  // secret and a fresh key under which the store tells newcomers what they join (this
  // communicator's tag, its next grow round, its size). Local: one member makes it.
  bootstrap::UniqueId growId();
  // The enlarged communicator of newSize ranks (tutti_comm_grow): this one's ranks keep their
  // numbers, newcomers (initGrowing) take the others. Collective over the members and the
  // newcomers. This communicator stays as it was. newSize passed checkGrowSize.
  std::unique_ptr<Communicator> grow(int newSize);
  // Refuses a grow to newSize that would not add a rank (kInvalidArgument). Checked before the
  // grow runs on the engine, where an error fails the communicator: a refused argument must
  // leave it working.
  void checkGrowSize(int newSize) const;
  // What members and newcomers share in a grow: every rank's record, with the size it expects,
  // allgathered under the round's prefix; then the communicator of them all, tagged
  // `tag`.g`round`.
  static std::unique_ptr<Communicator> grown(JobBootstrap job, const std::string& tag, int round,
                                             int rank, int newSize, const PeerInfo& self,
                                             const Settings& settings);

 private:
  Communicator() = default;
  // One thread issues a communicator's operations; a dump may read the counts from another, so
  // they are atomic, but need no read-modify-write.
  static uint64_t advance(std::atomic<uint64_t>& count) {
    const uint64_t next = count.load(std::memory_order_relaxed) + 1;
    count.store(next, std::memory_order_relaxed);
    return next;
  }
  void connect();
  // The settings of a communicator made from this one: the current timeout bounds its init.
  Settings childSettings(const ChildConfig& config = {}) const;
  // A communicator of `members` (this one's ranks, in the new order) tagged `childTag`; nullptr
  // when this rank is not a member. Collective over the members.
  std::unique_ptr<Communicator> childOf(const std::vector<int>& members,
                                        const std::string& childTag, const Settings& settings);

  JobBootstrap job_;
  std::string tag_;
  int rank_ = 0;
  int localRank_ = 0;
  int localSize_ = 1;
  bool oversubscribed_ = false;
  CpuRing cpuRing_;
  std::vector<PeerInfo> peers_;
  Settings settings_;
  std::atomic<int64_t> timeoutMs_{0};  // timeout(); settings_.timeout at create
  std::unique_ptr<Connections> connections_;
  std::unique_ptr<PeerWatch> peerWatch_;
  std::unique_ptr<FlightRecorder> recorder_;
  // Before the engine: its queued operations use the pool until it has drained.
  gpu::PinnedPool stagingPool_;
  std::unique_ptr<gpu::DeviceRing> deviceRing_;  // holds leases of stagingPool_
  std::optional<gpu::KernelPlan> kernelPlan_;
  std::unique_ptr<Engine> engine_;
  bool connected_ = false;  // created in full: traced and watched for SIGUSR1
  std::atomic<uint64_t> sequence_{0};
  std::atomic<uint64_t> collectives_{0};
  int splits_ = 0;
  int shrinks_ = 0;
  int grows_ = 0;
  std::atomic<int> device_{-1};
  int anySourceStart_ = 0;
  FailureState failure_;
};

}  // namespace tutti::runtime
