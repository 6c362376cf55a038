#include "runtime/collectives/p2p.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <optional>

#include "base/error.hpp"
#include "runtime/collectives/send_source.hpp"

namespace tutti::runtime {
namespace {

constexpr const char* kFromAnyRank = "for data from any rank";

struct Progress {
  const P2PTransfer* transfer = nullptr;
  int peer = 0;  // the transfer's; kAnySource until a receive from any source has chosen one
  size_t done = 0;
  std::optional<SendSource> source;  // a send's bytes
  // A receive's: the sends of the batch whose bytes it may overwrite (in-place send/recv).
  std::vector<Progress*> overwrites;
};

// Whether a receive writing [to, to + bytes) would destroy bytes a send of the batch has not sent.
bool wouldOverwriteUnsent(const Progress& receive, const void* to, size_t bytes) {
  return std::any_of(receive.overwrites.begin(), receive.overwrites.end(), [&](Progress* send) {
    return send->source->wouldLose(to, bytes, send->done);
  });
}

// Before a receive writes [to, to + bytes): the bytes of the batch's sends there that have not
// gone out yet are saved.
void beforeWriting(const Progress& receive, const void* to, size_t bytes) {
  for (Progress* send : receive.overwrites) send->source->saveBefore(to, bytes, send->done);
}

// Moves as much of `item` as the connection allows now; true when something moved. A receive
// that would overwrite bytes still to be sent waits for them to go out, unless `saveUnsent`.
bool advance(OpContext& ctx, Progress& item, bool saveUnsent) {
  const P2PTransfer& t = *item.transfer;
  bool moved = false;
  while (item.done < t.bytes) {
    if (t.isSend) {
      transport::SendConn& conn = ctx.group.connections.sendTo(item.peer);
      void* slot = ctx.guarded([&] { return conn.tryAcquire(); });
      if (!slot) break;
      const size_t chunk = std::min(conn.slotBytes(), t.bytes - item.done);
      item.source->copyOut(slot, item.done, chunk);
      conn.post(chunk, ctx.tag());
      item.done += chunk;
    } else {
      transport::RecvConn& conn = ctx.group.connections.recvFrom(item.peer);
      const size_t chunk = std::min(conn.slotBytes(), t.bytes - item.done);
      char* to = static_cast<char*>(t.recvBuffer) + item.done;
      if (!saveUnsent && wouldOverwriteUnsent(item, to, chunk)) break;
      transport::Envelope got;
      const void* slot = ctx.guarded([&] { return conn.tryPeek(&got); });
      if (!slot) break;
      if (!ctx.isOwnMessage(got, chunk)) ctx.raiseNotOwnMessage(item.peer, got, chunk);
      beforeWriting(item, to, chunk);
      std::memcpy(to, slot, chunk);
      conn.release();
      item.done += chunk;
    }
    moved = true;
  }
  return moved;
}

// The next message from `peer` when it has arrived, else nullptr; a connection closed by a peer
// that left in good order reads as nothing, and marks it in `left` (it will send nothing more).
const void* lookAtNext(OpContext& ctx, int peer, transport::Envelope* got,
                       std::vector<bool>& left) {
  try {
    return ctx.guarded([&] { return ctx.group.connections.recvFrom(peer).tryPeek(got); });
  } catch (const Error& error) {
    if (error.code() != ErrorCode::kRemote) throw;
    const auto trouble = ctx.explainLost(peer);
    if (!trouble) throw;
    if (trouble->kind != PeerTrouble::Kind::kLeft) ctx.raiseTrouble(*trouble, kFromAnyRank);
    left[static_cast<size_t>(peer)] = true;
    return nullptr;
  }
}

// A receive from any source chooses the first other rank whose next message is a send's, looking
// from the rank after the one the communicator's last such receive took from (senders whose
// messages wait together are taken in turn), among those whose messages no earlier receive of
// the batch waits for (`busy`: MPI's matching order); a message of another call (a collective the
// peer went on to) stays for that call. Nothing is taken here: the receive then runs as one from
// that rank. True once chosen.
bool chooseSource(OpContext& ctx, Progress& item, const std::vector<bool>& busy,
                  std::vector<bool>& left) {
  const int self = ctx.group.rank, size = ctx.group.size;
  int& start = ctx.anySourceStart();
  for (int i = 0; i < size; ++i) {
    const int peer = (start + i) % size;
    if (peer == self || busy[2 * static_cast<size_t>(peer)] || left[static_cast<size_t>(peer)])
      continue;
    transport::Envelope got;
    if (lookAtNext(ctx, peer, &got, left) && accepts(ctx.tag(), got.tag)) {
      item.peer = peer;
      *item.transfer->source = peer;
      start = (peer + 1) % size;
      return true;
    }
  }
  if (std::count(left.begin(), left.end(), true) == size - 1)
    raise(ErrorCode::kRemote,
          "{}: waiting {}: every other rank has left (destroyed its communicator)", ctx.where(),
          kFromAnyRank);
  return false;
}

// Sends to this rank itself meet its receives from itself in order: a copy.
void matchSelfTransfers(OpContext& ctx, std::vector<Progress>& transfers) {
  std::vector<Progress*> sends, recvs;
  for (Progress& t : transfers)
    if (t.transfer->peer == ctx.group.rank) (t.transfer->isSend ? sends : recvs).push_back(&t);
  if (sends.size() != recvs.size())
    raise(ErrorCode::kInvalidUsage, "{}: {} sends to this rank itself but {} receives from it",
          ctx.where(), sends.size(), recvs.size());
  for (size_t i = 0; i < sends.size(); ++i) {
    const size_t bytes = sends[i]->transfer->bytes;
    if (bytes != recvs[i]->transfer->bytes)
      raise(ErrorCode::kInvalidUsage,
            "{}: a send of {} bytes to this rank itself meets a receive of {} bytes", ctx.where(),
            bytes, recvs[i]->transfer->bytes);
    if (bytes == 0) continue;
    beforeWriting(*recvs[i], recvs[i]->transfer->recvBuffer, bytes);
    sends[i]->source->copyOut(recvs[i]->transfer->recvBuffer, 0, bytes);
    sends[i]->done = recvs[i]->done = bytes;
  }
}

// The batch's transfers, each receive knowing the sends it may overwrite.
std::vector<Progress> progressOf(const std::vector<P2PTransfer>& transfers) {
  std::vector<Progress> items;
  items.reserve(transfers.size());  // stable: receives point at sends
  for (const P2PTransfer& t : transfers) {
    Progress& item = items.emplace_back();
    item.transfer = &t;
    item.peer = t.peer;
    if (t.isSend) item.source.emplace(t.sendBuffer, t.bytes);
  }
  for (Progress& receive : items)
    if (!receive.transfer->isSend)
      for (Progress& send : items)
        if (send.source &&
            send.source->overlaps(receive.transfer->recvBuffer, receive.transfer->bytes))
          receive.overwrites.push_back(&send);
  return items;
}

}  // namespace

void runTransfers(OpContext& ctx, const std::vector<P2PTransfer>& transfers,
                  const MoreTransfers& joining) {
  std::vector<Progress> progress = progressOf(transfers);
  matchSelfTransfers(ctx, progress);
  std::vector<Progress*> items;
  for (Progress& item : progress)
    if (item.done < item.transfer->bytes) items.push_back(&item);
  // Joined transfers, stable in memory (items point at them). They are separate operations, so
  // none is checked for overwriting another's unsent bytes, as between any two operations.
  std::deque<P2PTransfer> joinedTransfers;
  std::deque<Progress> joined;
  auto join = [&] {
    if (!joining) return false;
    std::vector<P2PTransfer> more = joining();
    for (const P2PTransfer& t : more) {
      Progress& item = joined.emplace_back();
      item.transfer = &joinedTransfers.emplace_back(t);
      item.peer = t.peer;
      if (t.isSend) item.source.emplace(t.sendBuffer, t.bytes);
      if (t.bytes > 0) items.push_back(&item);
    }
    return !more.empty();
  };
  // In-place receives wait for the sends they would overwrite: on a ring each send runs a FIFO
  // ahead of its receive, and nothing is copied. Only where that stops everything (a receive more
  // than a FIFO ahead of the send it overwrites can wait in a cycle) do the sends' bytes get saved
  // and the receives go on, after kHoldBack without movement. Waiting is what the batch would do
  // anyway for a slow peer (its send must end too), while saving page-faults a copy in; 20 ms
  // still mistook peers descheduled on the loaded 2-core VM for a cycle.
  constexpr auto kHoldBack = std::chrono::milliseconds(200);
  bool saveUnsent = false;
  auto lastMoved = std::chrono::steady_clock::now();
  Stall stall(ctx);
  std::vector<bool> left(static_cast<size_t>(ctx.group.size), false);  // chooseSource's
  join();
  while (!items.empty()) {
    bool moved = join();
    // Only the oldest unfinished transfer per (peer, direction) may move: FIFO order. A receive
    // from any source that has not chosen its peer holds back every receive after it.
    std::vector<bool> busy(2 * static_cast<size_t>(ctx.group.size), false);
    bool choosing = false;
    for (Progress* item : items) {
      if (!item->transfer->isSend && choosing) continue;
      if (item->peer == kAnySource && !chooseSource(ctx, *item, busy, left)) {
        choosing = true;
        continue;
      }
      const size_t lane = 2 * static_cast<size_t>(item->peer) + item->transfer->isSend;
      if (busy[lane]) continue;
      busy[lane] = true;
      moved = advance(ctx, *item, saveUnsent) || moved;
    }
    std::erase_if(items, [](const Progress* item) { return item->done == item->transfer->bytes; });
    if (items.empty() && !join()) break;
    if (moved) {
      stall.reset();
      lastMoved = std::chrono::steady_clock::now();
      continue;
    }
    if (!saveUnsent && std::chrono::steady_clock::now() - lastMoved > kHoldBack) {
      saveUnsent = true;
      continue;
    }
    ctx.guarded([&] { ctx.group.connections.progress(); });
    const Progress& waiting = *items.front();
    if (waiting.peer == kAnySource)
      stall.pause(-1, kFromAnyRank);
    else
      stall.pause(waiting.peer, waiting.transfer->isSend ? "for a free slot to" : "for data from");
  }
}

}  // namespace tutti::runtime
