// A communicator: this rank's view of a group of ranks, composed of small parts — who the members
// are (Membership), a connection to every peer (Connections), what the peers said and did
// (PeerWatch), the first failure (FailureState), the engine that runs its operations in order, the
// flight recorder, the operations' counts, and the device side (DeviceSide). The first failure is
// kept and fails every later operation with the same message. The communicator itself does what
// spans parts: making one (connecting, then watching), failing, splitting, shrinking, growing.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/bootstrap/bootstrap.hpp"
#include "runtime/collectives/autotune.hpp"
#include "runtime/connections.hpp"
#include "runtime/device_side.hpp"
#include "runtime/engine.hpp"
#include "runtime/failure_state.hpp"
#include "runtime/group_view.hpp"
#include "runtime/job_bootstrap.hpp"
#include "runtime/membership.hpp"
#include "runtime/observe/flight_recorder.hpp"
#include "runtime/operation_counts.hpp"
#include "runtime/operation_timeout.hpp"
#include "runtime/peer_info.hpp"
#include "runtime/peer_watch.hpp"
#include "runtime/settings.hpp"

namespace tutti::runtime {

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

  // Who the members are: tag, ranks, their facts and places, the ring (membership.hpp).
  const Membership& members() const { return members_; }
  int rank() const { return members_.rank(); }
  int size() const { return members_.size(); }
  const PeerInfo& peer(int rank) const { return members_.peer(rank); }
  const std::string& tag() const { return members_.tag(); }
  // What its algorithms see of it (group_view.hpp).
  GroupView view() {
    return {rank(), size(), *connections_, members_.peers(), members_.ring(), settings_, picks_};
  }
  const Settings& settings() const { return settings_; }
  // TUTTI_AUTOTUNE's trials of the all-reduce algorithms (autotune.hpp), on the engine.
  Autotune& autotune() { return autotune_; }
  // "auto", "ring", "tree", "oneshot" or "direct" (kInvalidArgument otherwise); ordered with the
  // operations.
  void setAlgorithm(const std::string& algorithm);
  // The bound on a stalled wait (operation_timeout.hpp).
  std::chrono::milliseconds timeout() const { return timeout_.get(); }
  void setTimeout(std::chrono::milliseconds timeout) { timeout_.set(timeout, rank()); }
  // Every peer's connection, whatever its transport.
  Connections& connections() { return *connections_; }
  const Connections& connections() const { return *connections_; }

  Engine& engine() { return *engine_; }
  OperationCounts& counts() { return counts_; }
  const OperationCounts& counts() const { return counts_; }
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

  // Device buffers' device, staging memory, kernel plan and device ring (device_side.hpp).
  DeviceSide& device() { return *device_; }

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
  Communicator(JobBootstrap job, const Settings& settings, Membership members);
  void connect();
  // The settings of a communicator made from this one: the current timeout bounds its init.
  Settings childSettings(const ChildConfig& config = {}) const;
  // A communicator of `members` (this one's ranks, in the new order) tagged `childTag`; nullptr
  // when this rank is not a member. Collective over the members.
  std::unique_ptr<Communicator> childOf(const std::vector<int>& members,
                                        const std::string& childTag, const Settings& settings);

  JobBootstrap job_;
  Settings settings_;
  PickMemo picks_;
  Autotune autotune_;
  Membership members_;
  OperationTimeout timeout_;
  std::unique_ptr<Connections> connections_;
  std::unique_ptr<PeerWatch> peerWatch_;
  std::unique_ptr<FlightRecorder> recorder_;
  // Before the engine: its queued operations use the staging pool until it has drained.
  std::unique_ptr<DeviceSide> device_;
  std::unique_ptr<Engine> engine_;
  bool connected_ = false;  // created in full: traced and watched for SIGUSR1
  OperationCounts counts_;
  // How many splits, shrinks and grows this communicator has made: they name the children.
  struct ChildRounds {
    int splits = 0;
    int shrinks = 0;
    int grows = 0;
  } rounds_;
  FailureState failure_;
};

}  // namespace tutti::runtime
