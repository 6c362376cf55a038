#include "runtime/peer_watch.hpp"

#include <signal.h>

#include <charconv>
#include <fstream>

#include "base/byte_codec.hpp"
#include "base/log.hpp"
#include "transport/detail/departure_record.hpp"

namespace tutti::runtime {
namespace {

using namespace std::chrono_literals;
using transport::Departure;
using State = Departure::State;

constexpr auto kLivenessEvery = 10ms;
constexpr auto kStoreEvery = 100ms;
constexpr auto kStoreWait = 1s;  // a stopped rank 0 must not hold a failing rank

// The state letter of /proc/PID/stat (R, S, D, T stopped, t traced, Z zombie, ...); '?' when
// unknown. It follows the command name, which may itself hold ')', hence the last one.
char processState(long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
  const size_t close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() ? text[close + 2] : '?';
}

bool processGone(long pid) {
  if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return true;
  // Killed but not yet reaped by its launcher: kill() still finds a zombie.
  return processState(pid) == 'Z';
}

// The store's form of a departure: its state (u32), then the body as the shm note has it.
std::string encode(const Departure& departure) {
  ByteWriter out;
  out.u32(static_cast<uint32_t>(departure.state));
  transport::writeDepartureBody(out, departure);
  return std::string(out.bytes());
}

// A value some peer wrote: anything malformed reads as no departure.
Departure decode(const std::string& bytes) {
  ByteReader in(bytes, ErrorCode::kRemote, "a departure in the store");
  Departure departure;
  try {
    departure.state = transport::departureStateOf(in.u32());
    if (departure.state == State::kNone) return {};
    transport::readDepartureBody(in, departure);
    in.end();
  } catch (const Error&) {
    return {};
  }
  return departure;
}

PeerTrouble troubleOf(int peer, const Departure& departure) {
  return {
      departure.state == State::kAborted ? PeerTrouble::Kind::kAborted : PeerTrouble::Kind::kGaveUp,
      peer, departure};
}

bool gaveUp(const Departure& departure) {
  return departure.state == State::kFailed || departure.state == State::kAborted;
}

}  // namespace

PeerWatch::PeerWatch(int rank, const std::vector<PeerInfo>& peers,
                     std::vector<transport::Transport*> carriers,
                     std::shared_ptr<bootstrap::Store> store, std::string tag)
    : rank_(rank),
      peers_(peers),
      carriers_(std::move(carriers)),
      store_(std::move(store)),
      tag_(std::move(tag)),
      departed_(peers.size()),
      lost_(peers.size()) {}

std::string PeerWatch::storeKey(int rank) const {
  return tag_ + "/left/" + std::to_string(rank);
}

void PeerWatch::announce(const Departure& departure) {
  if (announced_.exchange(true)) return;
  for (transport::Transport* carrier : carriers_)
    if (carrier) carrier->announce(departure);  // idempotent: the first call per transport wins
  try {
    const Deadline deadline = Deadline::after(kStoreWait);
    store_->set(storeKey(rank_), encode(departure), deadline);
    // The key waiters poll: which rank to ask about. Finishing in good order concerns only the
    // ranks that still wait for this one, which ask by its rank.
    if (gaveUp(departure)) store_->set(tag_ + "/failed", std::to_string(rank_), deadline);
  } catch (const Error& error) {
    // The store's host (rank 0) may be the cause; the transports' notes still tell local peers.
    log::info("rank {}: could not leave a note in the store: {}", rank_, error.what());
  }
}

Departure PeerWatch::departureOf(int peer, bool askStore) {
  if (transport::Transport* carrier = carriers_[static_cast<size_t>(peer)]) {
    Departure departure = carrier->departureOf(peer);
    if (departure.state != State::kNone || !askStore) return departure;
  }
  if (!askStore) return {};
  try {
    const Deadline deadline = Deadline::after(kStoreWait);
    if (!store_->check(storeKey(peer), deadline)) return {};
    return decode(store_->get(storeKey(peer), deadline));
  } catch (const Error&) {
    return {};  // the store is gone (rank 0 died): the kernel or the timeout will tell
  }
}

bool PeerWatch::local(const PeerInfo& peer) const {
  const PeerInfo& self = peers_[static_cast<size_t>(rank_)];
  return peer.hostId == self.hostId && peer.pid != self.pid;
}

std::string PeerWatch::stoppedLocalPeers() const {
  std::string out;
  for (const PeerInfo& peer : peers_) {
    if (!local(peer)) continue;
    const char state = processState(peer.pid);
    if (state == 'T' || state == 't')
      out += fmt::format("; rank {} ({}) is stopped (SIGSTOP or a debugger)", peer.rank,
                         describe(peer));
  }
  return out;
}

std::optional<PeerTrouble> PeerWatch::lookAtDeadPeers(int awaited, bool now) {
  const auto time = std::chrono::steady_clock::now();
  if (!now && time - lastLivenessCheck_ < kLivenessEvery) return std::nullopt;
  lastLivenessCheck_ = time;
  std::optional<PeerTrouble> echo;
  for (const PeerInfo& peer : peers_) {
    if (!local(peer) || !processGone(peer.pid)) continue;
    // A departure is final: ask the store (tcp peers leave their notes only there) once.
    Departure& departure = departed_[static_cast<size_t>(peer.rank)];
    if (departure.state == State::kNone) departure = departureOf(peer.rank, true);
    if (departure.state == State::kNone)
      return PeerTrouble{PeerTrouble::Kind::kDied, peer.rank, {}};
    if (departure.state == State::kFinished) {
      if (peer.rank == awaited) echo = PeerTrouble{PeerTrouble::Kind::kLeft, peer.rank, departure};
    } else if (!echo) {
      echo = troubleOf(peer.rank, departure);
    }
  }
  return echo;
}

std::optional<PeerTrouble> PeerWatch::lookAtNotes(bool askStore) {
  for (const PeerInfo& peer : peers_) {
    if (peer.rank == rank_ || !carriers_[static_cast<size_t>(peer.rank)]) continue;
    const Departure departure = departureOf(peer.rank, false);
    if (gaveUp(departure)) return troubleOf(peer.rank, departure);
  }
  const auto now = std::chrono::steady_clock::now();
  if (!askStore || now - lastStoreCheck_ < kStoreEvery) return std::nullopt;
  lastStoreCheck_ = now;
  try {
    const Deadline deadline = Deadline::after(kStoreWait);
    if (!store_->check(tag_ + "/failed", deadline)) return std::nullopt;
    const std::string text = store_->get(tag_ + "/failed", deadline);
    int peer = -1;
    const auto [next, error] = std::from_chars(text.data(), text.data() + text.size(), peer);
    if (error != std::errc() || peer < 0 || peer >= static_cast<int>(peers_.size()) ||
        peer == rank_)
      return std::nullopt;
    const Departure departure = departureOf(peer, true);
    if (gaveUp(departure)) return troubleOf(peer, departure);
  } catch (const Error&) {
    // The store is gone (rank 0 died): the kernel or the timeout will tell.
  }
  return std::nullopt;
}

std::optional<PeerTrouble> PeerWatch::look(int awaited, bool askStore) {
  if (auto trouble = lookAtDeadPeers(awaited, false)) return trouble;
  return lookAtNotes(askStore);
}

std::optional<PeerTrouble> PeerWatch::explainLost(int peer) {
  const Departure departure = departureOf(peer, true);
  if (departure.state == State::kFinished)
    return PeerTrouble{PeerTrouble::Kind::kLeft, peer, departure};
  if (gaveUp(departure)) return troubleOf(peer, departure);
  if (auto died = lookAtDeadPeers(-1, true); died && died->kind == PeerTrouble::Kind::kDied)
    return died;
  lost_[static_cast<size_t>(peer)] = true;
  return std::nullopt;
}

std::vector<int> PeerWatch::gonePeers() {
  std::vector<int> gone;
  for (const PeerInfo& peer : peers_)
    if (lost_[static_cast<size_t>(peer.rank)] || (local(peer) && processGone(peer.pid)))
      gone.push_back(peer.rank);
  return gone;
}

Error describeTrouble(const PeerTrouble& trouble, const PeerInfo& peer, const std::string& where,
                      const std::string& awaited) {
  const std::string who = fmt::format("rank {} ({})", trouble.peer, describe(peer));
  switch (trouble.kind) {
    case PeerTrouble::Kind::kDied:
      return Error(ErrorCode::kRemote, fmt::format("{}: {} is gone: its process exited while "
                                                   "waiting {}",
                                                   where, who, awaited));
    case PeerTrouble::Kind::kLeft:
      return Error(ErrorCode::kInvalidUsage,
                   fmt::format("{}: {} left: it destroyed its communicator after {} collectives "
                               "while this rank was waiting {}; the ranks called different "
                               "collectives",
                               where, who, trouble.departure.collectives, awaited));
    case PeerTrouble::Kind::kAborted:
      return Error(ErrorCode::kRemote, fmt::format("{}: {} aborted the communicator while "
                                                   "waiting {}",
                                                   where, who, awaited));
    case PeerTrouble::Kind::kGaveUp: break;
  }
  const int code = trouble.departure.code;
  const bool known = code >= static_cast<int>(ErrorCode::kInvalidArgument) &&
                     code <= static_cast<int>(ErrorCode::kInternal);
  return Error(known ? static_cast<ErrorCode>(code) : ErrorCode::kRemote,
               fmt::format("{}: {} gave up while this rank was waiting {}; its error: {}", where,
                           who, awaited, trouble.departure.message));
}

}  // namespace tutti::runtime
