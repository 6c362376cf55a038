// Why a stalled wait will never end: a peer on this host whose process is gone, a peer that gave
// up (its communicator failed or was aborted), or a peer that left in good order while this rank
// still needs it. Every rank announces its departure once, when its communicator fails, is aborted
// or is destroyed: to the transports (shm keeps it in shared memory, readable after the process is
// gone) and in the store (readable from every host while rank 0 lives). A waiter then names the
// cause, not an echo: a survivor that exits after failing says why, so the peers that see it go
// repeat its reason instead of blaming it, and a rank that finished its part and exited fails
// nobody that no longer needs it.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "runtime/bootstrap/bootstrap.hpp"
#include "runtime/peer_info.hpp"
#include "transport/transport.hpp"

namespace tutti::runtime {

struct PeerTrouble {
  enum class Kind {
    kDied,     // a local peer's process is gone without a word
    kLeft,     // the awaited peer destroyed its communicator in good order
    kGaveUp,   // a peer's communicator failed: departure.message says why
    kAborted,  // a peer aborted the communicator
  };
  Kind kind;
  int peer;
  transport::Departure departure;
};

class PeerWatch {
 public:
  // carriers[r]: the transport that carries rank r's announcements (nullptr: only the store).
  PeerWatch(int rank, const std::vector<PeerInfo>& peers,
            std::vector<transport::Transport*> carriers, std::shared_ptr<bootstrap::Store> store,
            std::string tag);

  // Publishes this rank's departure; only the first call does anything. Waits at most a second
  // for the store, so that a failing rank never hangs on a stopped rank 0.
  void announce(const transport::Departure& departure);

  // One look for a waiter stalled on `awaited` (-1: on no one peer). Local processes are checked
  // with the kernel at most every 10 ms (shared memory cannot tell a dead writer from a slow one)
  // and the store at most every 100 ms, only when `askStore`. A peer that
  // died without a word is preferred over a failure note: the notes of ranks that failed because
  // of it are echoes.
  std::optional<PeerTrouble> look(int awaited, bool askStore);
  // Why the connection to `peer` failed (closed, reset): what it announced, else a peer on this
  // host that died without a word (a peer that cannot reach the store leaves no note there).
  std::optional<PeerTrouble> explainLost(int peer);
  // The peers this rank knows to be gone: local ones whose process has exited (the kernel is
  // asked now) and any whose connection broke with nothing to explain it (explainLost found no
  // note and no local death: a remote peer's process or host vanished). What tutti_comm_shrink's
  // TUTTI_SHRINK_DEAD excludes. From the waiters' thread, as explainLost.
  std::vector<int> gonePeers();
  // What `peer` announced, from its transport, else (when `askStore`) from the store.
  transport::Departure departureOf(int peer, bool askStore);

  // "; rank K (host:pid) is stopped (SIGSTOP or a debugger)" for each such peer on this host.
  std::string stoppedLocalPeers() const;

 private:
  bool local(const PeerInfo& peer) const;
  std::optional<PeerTrouble> lookAtDeadPeers(int awaited, bool now);
  std::optional<PeerTrouble> lookAtNotes(bool askStore);
  std::string storeKey(int rank) const;

  int rank_;
  const std::vector<PeerInfo>& peers_;
  std::vector<transport::Transport*> carriers_;
  std::shared_ptr<bootstrap::Store> store_;
  std::string tag_;
  std::atomic<bool> announced_{false};
  std::vector<transport::Departure> departed_;  // of local peers found gone; the waiters' thread's
  std::vector<bool> lost_;  // peers whose connection broke unexplained; the waiters' thread's
  std::chrono::steady_clock::time_point lastLivenessCheck_{};
  std::chrono::steady_clock::time_point lastStoreCheck_{};
};

// The error a waiter raises for `trouble`: `where` names its operation, `awaited` what it waited
// for ("for data from rank 3 (h:p, over shm)").
Error describeTrouble(const PeerTrouble& trouble, const PeerInfo& peer, const std::string& where,
                      const std::string& awaited);

}  // namespace tutti::runtime
