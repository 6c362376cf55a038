#include "runtime/communicator.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>

#include "base/config.hpp"
#include "base/log.hpp"
#include "runtime/collectives/algorithm.hpp"
#include "runtime/observe/dump_signal.hpp"
#include "runtime/observe/flight_dump.hpp"
#include "runtime/topology_plan.hpp"
#include "runtime/observe/trace.hpp"

namespace tutti::runtime {
namespace {

int availableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  return static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
}

// The words of `a` and `b` (space-separated, in the same order) that differ, each side's joined.
std::pair<std::string, std::string> differingWords(const std::string& a, const std::string& b) {
  std::istringstream inA(a), inB(b);
  std::string wordA, wordB, onlyA, onlyB;
  auto append = [](std::string& to, const std::string& word) {
    to += (to.empty() ? "" : " ") + (word.empty() ? std::string("(nothing)") : word);
  };
  while (true) {
    const bool gotA = static_cast<bool>(inA >> wordA), gotB = static_cast<bool>(inB >> wordB);
    if (!gotA && !gotB) break;
    if (!gotA) wordA.clear();
    if (!gotB) wordB.clear();
    if (wordA == wordB) continue;
    append(onlyA, wordA);
    append(onlyB, wordB);
  }
  return {onlyA, onlyB};
}

}  // namespace

std::unique_ptr<Communicator> Communicator::create(JobBootstrap job, std::string tag, int rank,
                                                   std::vector<PeerInfo> peers,
                                                   const Settings& settings,
                                                   const std::vector<int>& ringOrder) {
  std::unique_ptr<Communicator> comm(new Communicator());
  comm->job_ = std::move(job);
  comm->tag_ = std::move(tag);
  comm->rank_ = rank;
  comm->peers_ = std::move(peers);
  comm->settings_ = settings;
  comm->timeoutMs_.store(settings.timeout.count(), std::memory_order_relaxed);
  comm->recorder_ = std::make_unique<FlightRecorder>(settings.flightRecorderEntries);
  comm->engine_ = std::make_unique<Engine>(
      [raw = comm.get()](const Error& error) { raw->recordFailure(error); });
  const PeerInfo& self = comm->peers_[static_cast<size_t>(rank)];
  for (const PeerInfo& peer : comm->peers_) {
    if (const auto [theirs, mine] = differingWords(peer.agreedSettings, self.agreedSettings);
        theirs != mine)
      raise(ErrorCode::kInvalidUsage,
            "rank {}: settings differ between ranks: rank {} ({}) uses {}, rank {} uses {}; set "
            "them alike on every rank",
            rank, peer.rank, describe(peer), theirs, rank, mine);
    // Ranks on different rings would wait for data from different neighbours. Records carry a
    // fingerprint, not the order: n ranks each fetching n orders of n ranks would not scale. Each
    // rank names its own value.
    if (peer.ringOrderHash != self.ringOrderHash)
      raise(ErrorCode::kInvalidUsage,
            "rank {}: settings differ between ranks: rank {} ({}) uses another TUTTI_RING_ORDER "
            "than rank {}, which uses TUTTI_RING_ORDER='{}'{}; set it alike on every rank",
            rank, peer.rank, describe(peer), rank, formatRanks(settings.ringOrder),
            settings.ringOrder.empty() ? " (unset)" : "");
  }
  for (const PeerInfo& peer : comm->peers_) {
    if (peer.hostId != self.hostId) continue;
    if (peer.rank < rank) ++comm->localRank_;
  }
  comm->localSize_ = static_cast<int>(
      std::count_if(comm->peers_.begin(), comm->peers_.end(),
                    [&](const PeerInfo& peer) { return peer.hostId == self.hostId; }));
  comm->oversubscribed_ = comm->localSize_ > availableCores();
  comm->cpuRing_ = planCpuRing(comm->peers_, settings.transport, ringOrder);
  if (rank == 0) {
    logChannels(comm->cpuRing_);
    dumpTopology();
  }
  comm->connect();
  comm->connected_ = true;
  if (!settings.dumpDir.empty()) watchForDumpSignal(comm.get());
  return comm;
}

void Communicator::connect() {
  const int n = size();
  const Deadline deadline = Deadline::after(settings_.timeout);
  const PeerInfo& self = peers_[static_cast<size_t>(rank_)];
  // localTcpPeers: on this host but over tcp (TUTTI_TRANSPORT=tcp); shm still carries their
  // departure notes, which outlive a process where the store may not (rank 0's).
  std::vector<int> shmPeers, tcpPeers, localTcpPeers;
  for (int peer = 0; peer < n; ++peer) {
    if (peer == rank_) continue;
    const bool sameHost = peers_[static_cast<size_t>(peer)].hostId == self.hostId;
    if (settings_.transport == TransportChoice::kShm && !sameHost)
      raise(ErrorCode::kInvalidUsage,
            "rank {}: TUTTI_TRANSPORT=shm but rank {} runs on another host ({})", rank_, peer,
            describe(peers_[static_cast<size_t>(peer)]));
    const bool overTcp = settings_.transport == TransportChoice::kTcp;
    (sameHost && !overTcp ? shmPeers : tcpPeers).push_back(peer);
    if (sameHost && overTcp) localTcpPeers.push_back(peer);
  }
  transport::Options options;
  options.rank = rank_;
  options.nranks = n;
  options.jobTag = tag_;
  options.secret = job_.secret;
  options.slotBytes = settings_.slotBytes;
  options.slots = settings_.slots;
  options.socketsPerPeer = settings_.socketsPerPeer;
  // The whole job agrees on which transports exist, so every rank publishes both addresses.
  const bool anyShm = !shmPeers.empty() || !localTcpPeers.empty();
  const bool anyTcp = !tcpPeers.empty();
  if (anyShm) shm_ = transport::makeShmTransport(options);
  if (anyTcp) {
    options.bindHost = bootstrap::chooseAddress(&job_.rendezvous).host();
    tcp_ = transport::makeTcpTransport(options);
  }
  const std::string mine =
      (shm_ ? shm_->localAddress() : "") + "\n" + (tcp_ ? tcp_->localAddress() : "");
  const auto all = bootstrap::allgather(*job_.store, tag_ + "/addresses", rank_, n, mine, deadline);
  std::vector<std::string> shmAddresses(static_cast<size_t>(n)),
      tcpAddresses(static_cast<size_t>(n));
  for (int peer = 0; peer < n; ++peer) {
    const std::string& entry = all[static_cast<size_t>(peer)];
    const size_t newline = entry.find('\n');
    if (newline == std::string::npos)
      raise(ErrorCode::kRemote, "rank {}: malformed transport addresses from rank {}", rank_, peer);
    shmAddresses[static_cast<size_t>(peer)] = entry.substr(0, newline);
    tcpAddresses[static_cast<size_t>(peer)] = entry.substr(newline + 1);
  }
  if (shm_) {
    shm_->connect(shmPeers, shmAddresses, deadline);
    shm_->watch(localTcpPeers, shmAddresses);
  }
  if (tcp_) tcp_->connect(tcpPeers, tcpAddresses, deadline);
  // Notes of ranks on other hosts travel through the store only.
  std::vector<transport::Transport*> carriers(static_cast<size_t>(n), nullptr);
  for (const auto* local : {&shmPeers, &localTcpPeers})
    for (int peer : *local) carriers[static_cast<size_t>(peer)] = shm_.get();
  peerWatch_ = std::make_unique<PeerWatch>(rank_, peers_, std::move(carriers), job_.store, tag_);
  // A peer that died before this barrier leaves the others waiting with their shm segments still
  // named (connected() unlinks them); a launcher that then kills them would leak the names, so
  // they give up as soon as a local peer is gone.
  bootstrap::barrier(*job_.store, tag_ + "/connected", n, deadline, [&] {
    // No rank announces anything before its communicator exists: only deaths are seen here.
    if (const auto trouble = peerWatch_->look(-1, false))
      raise(ErrorCode::kRemote, "rank {}: rank {} ({}) is gone: its process exited in init", rank_,
            trouble->peer, describe(peers_[static_cast<size_t>(trouble->peer)]));
  });
  if (shm_) shm_->connected();
  if (tcp_) tcp_->connected();

  sendConns_.assign(static_cast<size_t>(n), nullptr);
  recvConns_.assign(static_cast<size_t>(n), nullptr);
  transportNames_.assign(static_cast<size_t>(n), "self");
  for (int peer : shmPeers) {
    sendConns_[static_cast<size_t>(peer)] = &shm_->send(peer);
    recvConns_[static_cast<size_t>(peer)] = &shm_->recv(peer);
    transportNames_[static_cast<size_t>(peer)] = shm_->name();
  }
  for (int peer : tcpPeers) {
    sendConns_[static_cast<size_t>(peer)] = &tcp_->send(peer);
    recvConns_[static_cast<size_t>(peer)] = &tcp_->recv(peer);
    transportNames_[static_cast<size_t>(peer)] = tcp_->name();
  }
  log::info("rank {}/{} ({}): connected, {} peers over shm, {} over tcp, slots {} x {} bytes",
            rank_, n, describe(self), shmPeers.size(), tcpPeers.size(), settings_.slots,
            settings_.slotBytes);
}

Communicator::~Communicator() {
  stopWatching(this);
  // Operations still queued finish (or fail) before the connections go away.
  if (engine_) engine_->drain();
  engine_.reset();
  // In good order: peers still finishing their last operation must not take this rank's exit
  // for a death. A failed communicator has announced its failure already.
  if (peerWatch_)
    peerWatch_->announce(
        transport::Departure{transport::Departure::State::kFinished, 0, lastCollective(), {}});
  if (connected_) writeTrace(*this);
}

const char* Communicator::transportTo(int peer) const {
  return transportNames_[static_cast<size_t>(peer)];
}

void Communicator::progress() {
  if (tcp_) tcp_->progress();
  if (shm_) shm_->progress();
}

void Communicator::setAlgorithm(const std::string& algorithm) {
  const std::vector<std::string> choices = allReduceChoices();
  if (std::find(choices.begin(), choices.end(), algorithm) == choices.end())
    raise(ErrorCode::kInvalidArgument, "rank {}: algorithm '{}' is not one of {}", rank_, algorithm,
          fmt::join(choices, ", "));
  const Algorithm* forced = allReduceChoice(algorithm);
  // Through the engine, so that operations already issued keep the algorithm they were issued with.
  engine_->run([&] { settings_.algorithm = forced; });
}

void Communicator::setTimeout(std::chrono::milliseconds timeout) {
  // TUTTI_TIMEOUT's range, in milliseconds; below a second is allowed.
  constexpr int64_t maxMs = config::kTimeoutMaxSeconds * 1000;
  if (timeout.count() < 1 || timeout.count() > maxMs)
    raise(ErrorCode::kInvalidArgument,
          "rank {}: timeout_ms {} is out of range [1, {}] (1 ms to TUTTI_TIMEOUT's maximum)", rank_,
          timeout.count(), maxMs);
  timeoutMs_.store(timeout.count(), std::memory_order_relaxed);
}

bool Communicator::keepFailure(const Error& error) {
  std::lock_guard lock(failureMutex_);
  if (failure_) return false;
  failure_ = error;
  failed_.store(true, std::memory_order_release);
  return true;
}

void Communicator::recordFailure(const Error& error) {
  if (!keepFailure(error)) return;
  // abort() has announced itself already (the first announcement wins).
  if (peerWatch_)
    peerWatch_->announce(transport::Departure{transport::Departure::State::kFailed,
                                              static_cast<int32_t>(error.code()), lastCollective(),
                                              error.what()});
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

std::optional<Error> Communicator::failure() const {
  std::lock_guard lock(failureMutex_);
  return failure_;
}

void Communicator::throwIfFailed() const {
  // Checked before every operation: a lock-free look first keeps the healthy path cheap.
  if (!failed_.load(std::memory_order_acquire)) return;
  std::lock_guard lock(failureMutex_);
  if (failure_) throw *failure_;
}

void Communicator::abort() {
  aborted_.store(true);
  // So that the peers fail naming this rank rather than time out.
  if (peerWatch_)
    peerWatch_->announce(
        transport::Departure{transport::Departure::State::kAborted, 0, lastCollective(), {}});
  recordFailure(
      Error(ErrorCode::kInvalidUsage, fmt::format("rank {}: the communicator was aborted", rank_)));
}

std::unique_ptr<Communicator> Communicator::split(int color, int key) {
  const int n = size();
  // Split is one of this communicator's operations: its waits use the current timeout, and the
  // new communicator (its connect included) starts with it.
  Settings childSettings = settings_;
  childSettings.timeout = timeout();
  const Deadline deadline = Deadline::after(childSettings.timeout);
  const std::string prefix = tag_ + "/split" + std::to_string(splits_++);
  const auto all = bootstrap::allgather(
      *job_.store, prefix, rank_, n, std::to_string(color) + " " + std::to_string(key), deadline);
  struct Member {
    int key;
    int rank;
  };
  std::vector<Member> members;
  for (int peer = 0; peer < n; ++peer) {
    std::istringstream in(all[static_cast<size_t>(peer)]);
    int peerColor = 0, peerKey = 0;
    if (!(in >> peerColor >> peerKey))
      raise(ErrorCode::kRemote, "rank {}: malformed split record from rank {}", rank_, peer);
    if (color >= 0 && peerColor == color) members.push_back({peerKey, peer});
  }
  if (color < 0) return nullptr;
  std::stable_sort(members.begin(), members.end(), [](const Member& a, const Member& b) {
    return a.key != b.key ? a.key < b.key : a.rank < b.rank;
  });
  std::vector<PeerInfo> peers;
  std::vector<int> newRanks(static_cast<size_t>(n), -1);  // by this communicator's rank
  for (const Member& member : members) {
    newRanks[static_cast<size_t>(member.rank)] = static_cast<int>(peers.size());
    PeerInfo info = peers_[static_cast<size_t>(member.rank)];
    info.rank = static_cast<int>(peers.size());
    peers.push_back(info);
  }
  // A given ring stays given: the members in its order. A planned one is planned afresh.
  std::vector<int> ringOrder;
  if (cpuRing_.given)
    for (int onRing : cpuRing_.order)
      if (const int newRank = newRanks[static_cast<size_t>(onRing)]; newRank >= 0)
        ringOrder.push_back(newRank);
  // Tags name shm segments too, so they use no '/'.
  const std::string childTag =
      tag_ + ".s" + std::to_string(splits_ - 1) + "c" + std::to_string(color);
  return create(job_, childTag, newRanks[static_cast<size_t>(rank_)], std::move(peers),
                childSettings, ringOrder);
}

}  // namespace tutti::runtime
