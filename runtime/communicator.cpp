#include "runtime/communicator.hpp"

#include <algorithm>
#include <sstream>

#include "base/shm_leftovers.hpp"
#include "runtime/collectives/algorithm.hpp"
#include "runtime/engine_placement.hpp"
#include "runtime/observe/dump_signal.hpp"
#include "runtime/observe/flight_dump.hpp"
#include "runtime/observe/trace.hpp"
#include "runtime/shrink_agreement.hpp"
#include "runtime/topology_plan.hpp"

namespace tutti::runtime {

Communicator::Communicator(JobBootstrap job, const Settings& settings, Membership members)
    : job_(std::move(job)),
      settings_(settings),
      members_(std::move(members)),
      timeout_(settings.timeout),
      recorder_(std::make_unique<FlightRecorder>(settings.flightRecorderEntries)),
      engine_(std::make_unique<Engine>(
          [this](const Error& error) { recordFailure(error); },
          [placement = settings.enginePlacement, localRank = members_.localRank()] {
            placeEngineThread(placement, localRank);
          })) {}

std::unique_ptr<Communicator> Communicator::create(JobBootstrap job, std::string tag, int rank,
                                                   std::vector<PeerInfo> peers,
                                                   const Settings& settings,
                                                   const std::vector<int>& ringOrder) {
  Settings planned = settings;
  planned.planFor(static_cast<int>(peers.size()));
  Membership members(std::move(tag), rank, std::move(peers), planned, ringOrder);
  if (rank == 0) {
    logChannels(members.ring());
    dumpTopology();
  }
  std::unique_ptr<Communicator> comm(new Communicator(std::move(job), planned, std::move(members)));
  comm->connect();
  comm->device_ = std::make_unique<DeviceSide>(DeviceSide::Links{
      comm->members_, comm->job_, comm->settings_, comm->timeout_, comm->failure_,
      *comm->peerWatch_, [raw = comm.get()](const Error& error) { raw->recordFailure(error); }});
  comm->connected_ = true;
  if (!settings.dumpDir.empty()) watchForDumpSignal(comm.get());
  return comm;
}

void Communicator::connect() {
  const int n = size();
  const Deadline deadline = Deadline::after(settings_.timeout);
  Connections::Plan plan;
  plan.rank = rank();
  for (const PeerInfo& peer : members_.peers()) plan.reach.push_back(peer.reach());
  plan.selection = settings_.transport;
  plan.options.rank = rank();
  plan.options.nranks = n;
  plan.options.jobTag = tag();
  plan.options.secret = job_.secret;
  plan.options.slotBytes = settings_.slotBytes;
  plan.options.slots = settings_.slots;
  plan.options.socketsPerPeer = settings_.socketsPerPeer;
  plan.options.rdmaPorts = members_.peer(rank()).rdmaPorts;
  plan.bindHost = [&] {
    return bootstrap::chooseAddress(settings_.socketInterfaces, &job_.rendezvous).host();
  };
  plan.describe = [&](int peer) { return members_.describePeer(peer); };
  // No rank announces anything before its communicator exists: only deaths are seen in init.
  // A member killed before every peer mapped its segments leaves their names in /dev/shm (no
  // launcher may be there to sweep them, and the survivors may go on: shrink), so they go first.
  const auto raiseGone = [&](int peer) {
    removeSharedMemory(segmentNamePrefix(job_.secret) + tag() + "-" + std::to_string(peer) + "-");
    raise(ErrorCode::kRemote, "rank {}: {} is gone: its process exited in init", rank(),
          members_.describePeer(peer));
  };
  const auto failIfPeerGone = [&](PeerWatch& watch) {
    if (const auto trouble = watch.look(-1, false)) raiseGone(trouble->peer);
  };
  // While connecting, before any transport can carry notes: the address exchange, and a transport
  // that waits for a peer (ucx's hello), give up as soon as a local peer is gone, not at the
  // timeout (a survivor of a shrink may die while the new communicator is made).
  PeerWatch connecting(rank(), members_.peers(),
                       std::vector<transport::Transport*>(members_.peers().size()), job_.store,
                       tag());
  const std::function<void()> checkPeers = [&] { failIfPeerGone(connecting); };
  plan.options.checkPeers = checkPeers;
  bool exchanged = false;  // past it, a failure may come from a peer that gave up
  plan.exchange = [&](const std::string& mine) {
    auto all = bootstrap::allgather(*job_.store, tag() + "/addresses", rank(), n, mine, deadline,
                                    checkPeers);
    exchanged = true;
    return all;
  };
  try {
    connections_ = std::make_unique<Connections>(std::move(plan), deadline);
  } catch (const Error&) {
    // A member that saw another die gives up its init and unlinks its segments: a rank still
    // mapping them then fails on a missing segment, whose cause is the death. Before the
    // exchange this rank's own failure (a transport it cannot make, a peer it cannot reach) is
    // the reason, whoever has exited since.
    if (!exchanged) throw;
    if (const std::vector<int> gone = connecting.gonePeers(); !gone.empty()) raiseGone(gone[0]);
    throw;
  }
  peerWatch_ = std::make_unique<PeerWatch>(rank(), members_.peers(), connections_->noteCarriers(),
                                           job_.store, tag());
  // A peer that died before this barrier leaves the others waiting with their shm segments still
  // named (connected() unlinks them); a launcher that then kills them would leak the names, so
  // they give up as soon as a local peer is gone.
  bootstrap::barrier(*job_.store, tag() + "/connected", n, deadline,
                     [&] { failIfPeerGone(*peerWatch_); });
  connections_->connected();
}

Communicator::~Communicator() {
  stopWatching(this);
  // Operations still queued finish (or fail) before the connections go away.
  if (engine_) engine_->drain();
  engine_.reset();
  device_.reset();
  // In good order: peers still finishing their last operation must not take this rank's exit
  // for a death. A failed communicator has announced its failure already.
  if (peerWatch_)
    peerWatch_->announce(transport::Departure{
        transport::Departure::State::kFinished, 0, counts_.lastCollective(), {}});
  if (connected_) writeTrace(*this);
  // What a failed communicator still had queued is owed to nobody: closing its connections
  // must not wait on a peer that stopped reading (a failed operation's sends to it are the
  // likeliest frames left).
  if (connections_ && failure_.failure()) connections_->abandonPendingSends();
}

void Communicator::setAlgorithm(const std::string& algorithm) {
  failure_.throwIfRetired();
  const std::vector<std::string> choices = allReduceChoices();
  if (std::find(choices.begin(), choices.end(), algorithm) == choices.end())
    raise(ErrorCode::kInvalidArgument, "rank {}: algorithm '{}' is not one of {}", rank(),
          algorithm, fmt::join(choices, ", "));
  const Algorithm* forced = allReduceChoice(algorithm);
  // Through the engine, so that operations already issued keep the algorithm they were issued with.
  engine_->run([&] { settings_.algorithm = forced; });
}

void Communicator::recordFailure(const Error& error) {
  if (!failure_.keep(error)) return;
  // abort() has announced itself already (the first announcement wins).
  if (peerWatch_)
    peerWatch_->announce(transport::Departure{transport::Departure::State::kFailed,
                                              static_cast<int32_t>(error.code()),
                                              counts_.lastCollective(), error.what()});
  const char* reason = "error";
  switch (error.code()) {
    case ErrorCode::kTimeout: reason = "timeout"; break;
    case ErrorCode::kRemote: reason = "remote error"; break;
    case ErrorCode::kSystem: reason = "system error"; break;
    case ErrorCode::kInternal: reason = "internal error"; break;
    default: break;
  }
  if (aborted()) reason = "abort";
  dumpFlightRecord(*this, reason);
}

void Communicator::abort() {
  failure_.markAborted();
  // So that the peers fail naming this rank rather than time out.
  if (peerWatch_)
    peerWatch_->announce(transport::Departure{
        transport::Departure::State::kAborted, 0, counts_.lastCollective(), {}});
  recordFailure(Error(ErrorCode::kInvalidUsage,
                      fmt::format("rank {}: the communicator was aborted", rank())));
}

Settings Communicator::childSettings(const ChildConfig& config) const {
  // Split and shrink are operations of this communicator: their waits use the current timeout,
  // and the new communicator (its connect included) starts with it.
  Settings child = settings_;
  child.timeout = timeout();
  if (config.socketInterfaces)
    child.socketInterfaces = {*config.socketInterfaces, "the config's socket_ifname"};
  return child;
}

void Communicator::checkChildConfig(const ChildConfig& config) const {
  try {
    bootstrap::chooseAddress(childSettings(config).socketInterfaces, &job_.rendezvous);
  } catch (const Error& error) {
    raise(error.code(), "rank {}: {}", rank(), error.what());
  }
}

std::unique_ptr<Communicator> Communicator::childOf(const std::vector<int>& members,
                                                    const std::string& childTag,
                                                    const Settings& settings) {
  std::vector<PeerInfo> peers;
  std::vector<int> newRanks(static_cast<size_t>(size()), -1);  // by this communicator's rank
  for (int member : members) {
    newRanks[static_cast<size_t>(member)] = static_cast<int>(peers.size());
    PeerInfo info = peer(member);
    info.rank = static_cast<int>(peers.size());
    peers.push_back(info);
  }
  const int newRank = newRanks[static_cast<size_t>(rank())];
  if (newRank < 0) return nullptr;
  // A given ring stays given: the members in its order. A planned one is planned afresh.
  std::vector<int> ringOrder;
  if (members_.ring().given)
    for (int onRing : members_.ring().order)
      if (const int member = newRanks[static_cast<size_t>(onRing)]; member >= 0)
        ringOrder.push_back(member);
  return create(job_, childTag, newRank, std::move(peers), settings, ringOrder);
}

std::unique_ptr<Communicator> Communicator::split(int color, int key, const ChildConfig& config) {
  failure_.throwIfRetired();
  const int n = size();
  const Settings settings = childSettings(config);
  const Deadline deadline = Deadline::after(settings.timeout);
  const std::string prefix = tag() + "/split" + std::to_string(rounds_.splits++);
  const auto all = bootstrap::allgather(
      *job_.store, prefix, rank(), n, std::to_string(color) + " " + std::to_string(key), deadline);
  struct Member {
    int key;
    int rank;
  };
  std::vector<Member> members;
  for (int peer = 0; peer < n; ++peer) {
    std::istringstream in(all[static_cast<size_t>(peer)]);
    int peerColor = 0, peerKey = 0;
    if (!(in >> peerColor >> peerKey))
      raise(ErrorCode::kRemote, "rank {}: malformed split record from rank {}", rank(), peer);
    if (color >= 0 && peerColor == color) members.push_back({peerKey, peer});
  }
  if (color < 0) return nullptr;
  std::stable_sort(members.begin(), members.end(), [](const Member& a, const Member& b) {
    return a.key != b.key ? a.key < b.key : a.rank < b.rank;
  });
  std::vector<int> ranks;
  for (const Member& member : members) ranks.push_back(member.rank);
  // Tags name shm segments too, so they use no '/'.
  return childOf(ranks,
                 tag() + ".s" + std::to_string(rounds_.splits - 1) + "c" + std::to_string(color),
                 settings);
}

std::unique_ptr<Communicator> Communicator::shrink(const std::vector<int>& excluded,
                                                   bool excludeGone) {
  failure_.throwIfRetired();
  const Settings settings = childSettings();
  const int round = rounds_.shrinks++;
  const ShrinkRound agreement{
      *job_.store, tag() + "/shrink" + std::to_string(round), rank(), size(),
      excludeGone ? std::function([this] { return peerWatch_->gonePeers(); }) : nullptr};
  const ShrinkDecision decision =
      agreeOnExcluded(agreement, excluded, Deadline::after(settings.timeout));
  std::vector<int> survivors;
  for (int rank = 0; rank < size(); ++rank)
    if (!std::binary_search(decision.excluded.begin(), decision.excluded.end(), rank))
      survivors.push_back(rank);
  auto child = childOf(survivors, tag() + ".k" + std::to_string(round), settings);
  if (!child)
    raise(ErrorCode::kInvalidUsage,
          "rank {}: this rank is excluded from the shrunk communicator: the survivors (decided by "
          "rank {}) exclude ranks {}",
          rank(), decision.decidedBy, formatRanks(decision.excluded));
  const std::optional<Error> before = failure();
  failure_.retire(Error(
      ErrorCode::kInvalidUsage,
      fmt::format("rank {}: this communicator was shrunk (tutti_comm_shrink excluded ranks {}) "
                  "into one of {} ranks, in which this rank is rank {}; use that one{}",
                  rank(), decision.excluded.empty() ? "none" : formatRanks(decision.excluded),
                  child->size(), child->rank(),
                  before ? fmt::format(" (it had failed before: {})", before->what()) : "")));
  return child;
}

}  // namespace tutti::runtime
