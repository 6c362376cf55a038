#include "runtime/collectives/p2p.hpp"

#include <algorithm>
#include <cstring>

#include "base/error.hpp"

namespace tutti::runtime {
namespace {

struct Progress {
  const P2PTransfer* transfer;
  size_t done = 0;
};

// Moves as much of `item` as the connection allows now; true when something moved.
bool advance(OpContext& ctx, Progress& item) {
  const P2PTransfer& t = *item.transfer;
  bool moved = false;
  while (item.done < t.bytes) {
    if (t.isSend) {
      transport::SendConn& conn = ctx.comm.sendTo(t.peer);
      void* slot = ctx.guarded([&] { return conn.tryAcquire(); });
      if (!slot) break;
      const size_t chunk = std::min(conn.slotBytes(), t.bytes - item.done);
      std::memcpy(slot, static_cast<const char*>(t.sendBuffer) + item.done, chunk);
      conn.post(chunk);
      item.done += chunk;
    } else {
      transport::RecvConn& conn = ctx.comm.recvFrom(t.peer);
      size_t got = 0;
      const void* slot = ctx.guarded([&] { return conn.tryPeek(&got); });
      if (!slot) break;
      const size_t chunk = std::min(conn.slotBytes(), t.bytes - item.done);
      if (got != chunk)
        raise(ErrorCode::kInvalidUsage,
              "{}: rank {} sent {} bytes where {} were expected: send and receive sizes differ",
              ctx.where(), t.peer, got, chunk);
      std::memcpy(static_cast<char*>(t.recvBuffer) + item.done, slot, chunk);
      conn.release();
      item.done += chunk;
    }
    moved = true;
  }
  return moved;
}

// Sends to this rank itself meet its receives from itself in order: a copy.
void matchSelfTransfers(OpContext& ctx, const std::vector<P2PTransfer>& transfers) {
  std::vector<const P2PTransfer*> sends, recvs;
  for (const P2PTransfer& t : transfers)
    if (t.peer == ctx.comm.rank()) (t.isSend ? sends : recvs).push_back(&t);
  if (sends.size() != recvs.size())
    raise(ErrorCode::kInvalidUsage, "{}: {} sends to this rank itself but {} receives from it",
          ctx.where(), sends.size(), recvs.size());
  for (size_t i = 0; i < sends.size(); ++i) {
    if (sends[i]->bytes != recvs[i]->bytes)
      raise(ErrorCode::kInvalidUsage,
            "{}: a send of {} bytes to this rank itself meets a receive of {} bytes", ctx.where(),
            sends[i]->bytes, recvs[i]->bytes);
    if (sends[i]->bytes > 0)
      std::memmove(recvs[i]->recvBuffer, sends[i]->sendBuffer, sends[i]->bytes);
  }
}

}  // namespace

void runTransfers(OpContext& ctx, const std::vector<P2PTransfer>& transfers) {
  matchSelfTransfers(ctx, transfers);
  std::vector<Progress> items;
  for (const P2PTransfer& t : transfers)
    if (t.bytes > 0 && t.peer != ctx.comm.rank()) items.push_back({&t});
  Stall stall(ctx);
  while (!items.empty()) {
    bool moved = false;
    // Only the oldest unfinished transfer per (peer, direction) may move: FIFO order.
    std::vector<bool> busy(2 * static_cast<size_t>(ctx.comm.size()), false);
    for (Progress& item : items) {
      const size_t lane = 2 * static_cast<size_t>(item.transfer->peer) + item.transfer->isSend;
      if (busy[lane]) continue;
      busy[lane] = true;
      moved = advance(ctx, item) || moved;
    }
    std::erase_if(items, [](const Progress& item) { return item.done == item.transfer->bytes; });
    if (items.empty()) break;
    if (moved) {
      stall.reset();
      continue;
    }
    ctx.guarded([&] { ctx.comm.progress(); });
    const P2PTransfer& waiting = *items.front().transfer;
    stall.pause(waiting.peer, waiting.isSend ? "for a free slot to" : "for data from");
  }
}

}  // namespace tutti::runtime
