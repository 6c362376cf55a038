#include "runtime/collectives/op_context.hpp"

#include "base/deadline.hpp"
#include "runtime/communicator.hpp"

namespace tutti::runtime {
namespace {

// "300 s", or "1500 ms" when not whole seconds.
std::string describeSpan(std::chrono::milliseconds span) {
  if (span.count() % 1000 == 0) return fmt::format("{} s", span.count() / 1000);
  return fmt::format("{} ms", span.count());
}

// "for data from rank 3 (host:pid, over shm)", or just "for its sends to drain".
std::string describeAwaited(const GroupView& group, int peer, const char* what) {
  if (peer < 0) return what;
  return fmt::format("{} rank {} ({}, over {})", what, peer, describe(group.peer(peer)),
                     group.connections.transportTo(peer));
}

// Runs `attempt` on the connection to `peer`. A connection the peer closed or reset is explained
// by what the peers announced: the peer gave up because of another rank, or left in good order.
template <typename Attempt>
auto attemptOn(OpContext& ctx, int peer, const char* what, Attempt attempt) {
  try {
    return ctx.guarded(attempt);
  } catch (const Error& error) {
    if (error.code() != ErrorCode::kRemote) throw;
    const auto trouble = ctx.explainLost(peer);
    if (!trouble) throw;
    ctx.raiseTrouble(*trouble, describeAwaited(ctx.group, peer, what));
  }
}

// Waits until `attempt` on `conn` returns non-null.
template <typename Attempt>
auto waitFor(OpContext& ctx, transport::Conn& conn, int peer, const char* what, Attempt attempt) {
  Stall stall(ctx, &conn);
  for (;;) {
    if (auto result = attemptOn(ctx, peer, what, attempt)) return result;
    ctx.guarded([&] { ctx.group.connections.progress(); });
    if (auto result = attemptOn(ctx, peer, what, attempt)) return result;
    stall.pause(peer, what);
  }
}

}  // namespace

// A communicator with sockets sleeps on their epoll set: sleeping on one shm FIFO instead could
// hold back the socket progress its peers wait for.
Stall::Stall(OpContext& ctx, transport::Conn* conn)
    : ctx_(ctx),
      wakingConn_(conn && conn->wakesSleepers() && ctx.group.connections.wakeFd() < 0 ? conn
                                                                                      : nullptr),
      backoff_(ctx.comm_.members().oversubscribed(), wakingConn_ != nullptr) {}

void Stall::pause(int peer, const char* what) {
  if ((backoff_.rounds() & 63) == 0) {
    ctx_.comm_.recorder().waitingOn(ctx_.sequence, peer);
    auto awaited = [&] { return describeAwaited(ctx_.group, peer, what); };
    if (ctx_.comm_.aborted()) ctx_.failAborted(awaited());
    // The communicator's timeout as this stall begins (tutti_comm_set_timeout may change it).
    if (!deadline_) {
      timeout_ = ctx_.timeout();
      deadline_ = Deadline::after(timeout_);
    }
    // Only a wait stalled for 100 ms asks the store: healthy waits never pay the round trip.
    const bool askStore = timeout_.count() - deadline_->remainingMs() >= 100;
    if (const auto trouble = ctx_.comm_.peerWatch().look(peer, askStore)) {
      // A peer gone without a word, or the awaited one gone in good order, may have delivered
      // what this wait is for before it went: the caller looks once more before it counts.
      const bool mayHaveDelivered =
          trouble->kind == PeerTrouble::Kind::kDied || trouble->kind == PeerTrouble::Kind::kLeft;
      if (mayHaveDelivered && trouble->peer != goneSeen_) {
        goneSeen_ = trouble->peer;
        return;
      }
      ctx_.raiseTrouble(*trouble, awaited());
    }
    if (deadline_->expired())
      raise(ErrorCode::kTimeout, "{}: timed out after {} waiting {}{}", ctx_.where(),
            describeSpan(timeout_), awaited(), ctx_.comm_.peerWatch().stoppedLocalPeers());
  }
  const long ns = backoff_.round();
  if (ns == 0) return;
  if (wakingConn_)
    wakingConn_->sleep(ns);
  else if (ctx_.group.connections.armWake())
    Backoff::sleepOn(ctx_.group.connections.wakeFd(), ns);
}

OpContext::OpContext(Communicator& comm, const OpDescription& description)
    : OpDescription(description),
      group(comm.view()),
      stores(group.connections.allShareMemory() &&
                     bytes >= group.settings.tuning.shmStreamingMinBytes
                 ? kernels::Stores::kStreaming
                 : kernels::Stores::kCached),
      comm_(comm) {}

void OpContext::raiseTrouble(const PeerTrouble& trouble, const std::string& awaited) {
  if (comm_.aborted()) failAborted(awaited);
  throw describeTrouble(trouble, group.peer(trouble.peer), where(), awaited);
}

void OpContext::failAborted(const std::string& awaited) {
  // The interrupted operation fails with the communicator's failure, which every later call
  // repeats: its own message when it records first, abort()'s when that came first.
  comm_.recordFailure(Error(ErrorCode::kInvalidUsage,
                            fmt::format("{}: aborted while waiting {}", where(), awaited)));
  throw *comm_.failure();
}

std::string OpContext::where() const {
  return fmt::format("rank {}: {} #{} ({}, {} bytes)", group.rank, collective, sequence, algorithm,
                     bytes);
}

void* OpContext::acquire(int peer) {
  transport::SendConn& conn = group.connections.sendTo(peer);
  return waitFor(*this, conn, peer, "for a free slot to", [&] { return conn.tryAcquire(); });
}

void OpContext::post(int peer, size_t bytes) {
  group.connections.sendTo(peer).post(bytes, tag());
}

bool OpContext::isOwnMessage(const transport::Envelope& got, size_t bytes) const {
  return got.bytes == bytes && accepts(tag(), got.tag);
}

void OpContext::raiseNotOwnMessage(int peer, const transport::Envelope& got, size_t bytes) {
  std::string problem;
  if (got.tag != tag())
    problem = fmt::format("rank {} is in a different call: {}", peer,
                          differentCalls(group.rank, call, peer, callOf(got.tag)));
  else if (call.collective == kPointToPointCall)
    problem =
        fmt::format("rank {} sent {} bytes where {} were expected: send and receive sizes differ",
                    peer, got.bytes, bytes);
  else
    problem = fmt::format(
        "rank {} sent {} bytes where {} were expected: the ranks called different collectives, "
        "counts or types, or were given different algorithms",
        peer, got.bytes, bytes);
  raise(ErrorCode::kInvalidUsage, "{}: {}", where(), problem);
}

const void* OpContext::peek(int peer, size_t bytes) {
  transport::RecvConn& conn = group.connections.recvFrom(peer);
  transport::Envelope got;
  const void* slot =
      waitFor(*this, conn, peer, "for data from", [&] { return conn.tryPeek(&got); });
  if (!isOwnMessage(got, bytes)) raiseNotOwnMessage(peer, got, bytes);
  return slot;
}

void OpContext::receiveInto(int peer, void* dst, size_t bytes) {
  transport::RecvConn& conn = group.connections.recvFrom(peer);
  const transport::Envelope expected{bytes, tag()};
  transport::Envelope got;
  try {
    waitFor(*this, conn, peer, "for data from",
            [&] { return conn.tryReceiveInto(dst, expected, &got) ? &conn : nullptr; });
  } catch (...) {
    conn.abandonReceive();
    throw;
  }
  // Only a message of exactly this tag was taken (exchanges of signatures peek instead).
  if (got != expected) raiseNotOwnMessage(peer, got, bytes);
}

void OpContext::release(int peer) {
  group.connections.recvFrom(peer).release();
}

void OpContext::postFrom(int peer, const void* data, size_t bytes) {
  transport::SendConn& conn = group.connections.sendTo(peer);
  waitFor(*this, conn, peer, "for a free slot to",
          [&] { return conn.tryPostFrom(data, bytes, tag()) ? &conn : nullptr; });
  sendsFromCaller_ = true;  // a transport that copied has nothing to copy later
}

void OpContext::drainSends() {
  Stall stall(*this);
  while (group.connections.sendsPending()) {
    guarded([&] { group.connections.progress(); });
    if (group.connections.sendsPending()) stall.pause(-1, "for its sends to drain");
  }
  sendsFromCaller_ = false;
}

void OpContext::letGoOfCallerMemory() noexcept {
  if (!sendsFromCaller_) return;
  group.connections.copyPendingSends();
  sendsFromCaller_ = false;
}

std::optional<PeerTrouble> OpContext::explainLost(int peer) {
  return comm_.peerWatch().explainLost(peer);
}

std::optional<PeerTrouble> OpContext::troubleAnywhere() {
  return comm_.peerWatch().look(-1, true);
}

void OpContext::recordAlgorithm(const char* instead) {
  comm_.recorder().started(sequence, instead);
}

std::chrono::milliseconds OpContext::timeout() const {
  return comm_.timeout();
}

int& OpContext::anySourceStart() {
  return comm_.counts().anySourceStart();
}

}  // namespace tutti::runtime
