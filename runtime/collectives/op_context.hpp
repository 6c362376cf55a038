// One running operation: what it is (for error messages), its data type and reduction, and the
// waits on its connections. Every wait spins, yields, then sleeps (base/deadline.hpp), moves the
// transports along, honours abort, and fails after the communicator's timeout (TUTTI_TIMEOUT or
// tutti_comm_set_timeout) without progress with a message that names the operation and the peer
// it was waiting for.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "base/deadline.hpp"
#include "kernels/kernels.hpp"
#include "runtime/collectives/message_tag.hpp"
#include "runtime/group_view.hpp"
#include "runtime/peer_watch.hpp"

namespace tutti::runtime {

class Communicator;
class OpContext;

// The waiting policy of one wait: spin, yield, then sleep; honour abort; fail when nothing has
// moved for the communicator's timeout, read when the stall begins. The deadline starts with the
// wait, so a long collective that keeps moving never times out; only a stall does.
class Stall {
 public:
  // `conn`: the one connection waited on, whose sleep ends when its peer moves (when it can);
  // nullptr for a wait on several.
  explicit Stall(OpContext& ctx, transport::Conn* conn = nullptr);
  // One round of waiting for `what` ("data from") rank `peer` (-1: no one peer); throws on abort
  // or timeout.
  void pause(int peer, const char* what);
  // Something moved: the next wait starts afresh.
  void reset() {
    backoff_.reset();
    deadline_.reset();
    goneSeen_ = -1;
  }

 private:
  OpContext& ctx_;
  transport::Conn* wakingConn_;  // non-null when its sleep ends as its peer moves
  Backoff backoff_;
  std::optional<Deadline> deadline_;
  std::chrono::milliseconds timeout_{0};  // the span deadline_ was set for
  int goneSeen_ = -1;  // a peer found gone once; found gone again after another look, it fails
};

// What one operation is: named in its error messages, and its messages are tagged with `call`.
struct OpDescription {
  const char* collective;  // "allreduce", ...
  const char* algorithm;   // "ring", ...
  uint64_t sequence;
  size_t bytes;
  kernels::DataType dtype;
  kernels::RedOp op;
  CallSignature call;  // every message it sends is tagged with it (message_tag.hpp)
  // kSignatures for the rounds whose messages are signatures that the receiver compares itself.
  Carries carries = Carries::kData;
};

// One running operation over its communicator's group (group_view.hpp): the algorithm's only way
// to its peers, and the waits' way to the communicator's peer watch, recorder and failure state.
class OpContext : public OpDescription {
 public:
  OpContext(Communicator& comm, const OpDescription& description);
  // A copy (a round of the operation with other tags or types) answers for its own sends only.
  OpContext(const OpContext& other)
      : OpDescription(other), group(other.group), stores(other.stores), comm_(other.comm_) {}
  // An operation that ends without draining its sends (it failed) lets go of the caller's memory.
  ~OpContext() { letGoOfCallerMemory(); }

  const GroupView group;
  // How the data paths write slots and results: streaming stores where every peer is over shared
  // memory and the operation holds at least the tuning table's shm_streaming_min_bytes.
  const kernels::Stores stores;

  size_t typeSize() const { return kernels::typeSize(dtype); }
  // Whole elements that fit in one slot.
  size_t slotElems() const {
    return group.connections.sendTo(firstPeer()).slotBytes() / typeSize();
  }
  int firstPeer() const { return group.rank == 0 ? 1 : 0; }

  // "rank 1: allreduce #17 (ring, 4096 bytes)"
  std::string where() const;
  transport::Tag tag() const { return tagOf(call, carries); }
  // Whether a message from a peer (`got`) belongs to this operation and holds `bytes`.
  bool isOwnMessage(const transport::Envelope& got, size_t bytes) const;
  // Throws kInvalidUsage for a message from `peer` that is not this operation's: naming both
  // calls when its tag differs. Only this rank may see it; the failure it becomes is announced
  // (PeerWatch), so the others fail with its reason rather than wait for this rank's messages.
  [[noreturn]] void raiseNotOwnMessage(int peer, const transport::Envelope& got, size_t bytes);

  // What a wait that finds `trouble` (peer_watch.hpp) throws: this rank's own abort when it
  // aborted meanwhile, as every wait does, else the peer's trouble.
  [[noreturn]] void raiseTrouble(const PeerTrouble& trouble, const std::string& awaited);
  // Records and throws this rank's abort, seen while waiting `awaited`.
  [[noreturn]] void failAborted(const std::string& awaited);

  // Runs a transport call; its errors know the peer but not the operation, so add it.
  template <typename Call>
  auto guarded(Call call) {
    try {
      return call();
    } catch (const Error& error) {
      raise(error.code(), "{}: {}", where(), error.what());
    }
  }

  void* acquire(int peer);
  void post(int peer, size_t bytes);
  // Waits for a free slot to peer and sends `bytes` from `data` (SendConn::tryPostFrom).
  void postFrom(int peer, const void* data, size_t bytes);
  // Waits for the next slot from peer and checks that it holds exactly `bytes`.
  const void* peek(int peer, size_t bytes);
  // Waits for the next message from peer, which must hold exactly `bytes`, and puts it in `dst`
  // (RecvConn::tryReceiveInto): for connections that receivesInPlace().
  void receiveInto(int peer, void* dst, size_t bytes);
  void release(int peer);
  // Waits until every posted slot has left this process; the last step of every operation.
  void drainSends();
  // When sends from the caller's memory may still be queued (postFrom without drainSends after
  // it), the transports copy what they have yet to send: a failed operation's caller may free
  // its buffers as soon as it sees the failure, before the transports give up on those sends
  // (tcp flushes them when it closes). The destructor calls it; a failure that reaches a caller
  // while this context lives calls it first.
  void letGoOfCallerMemory() noexcept;

  // What the peers announced or did that explains a connection to `peer` lost (peer_watch.hpp).
  std::optional<PeerTrouble> explainLost(int peer);
  // Trouble with any peer, the store asked too.
  std::optional<PeerTrouble> troubleAnywhere();
  // The flight recorder's entry for this operation names `instead` as its algorithm (direct's
  // fallback to what the planner picks without it).
  void recordAlgorithm(const char* instead);
  // The communicator's stall timeout now (tutti_comm_set_timeout may change it).
  std::chrono::milliseconds timeout() const;
  // OperationCounts::anySourceStart: where a receive from any source looks first.
  int& anySourceStart();

 private:
  friend class Stall;
  Communicator& comm_;
  bool sendsFromCaller_ = false;  // postFrom since the last drainSends
};

}  // namespace tutti::runtime
