#include "runtime/collectives/p2p.hpp"

#include <algorithm>
#include <cstdint>
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

// A send whose bytes a receive of the same batch may overwrite (in-place send/recv, larger than
// what the connection buffers) goes out from a copy taken before anything arrives.
std::vector<P2PTransfer> stageOverwrittenSends(const std::vector<P2PTransfer>& transfers,
                                               std::vector<std::vector<char>>& copies) {
  struct Range {
    uintptr_t begin, end;
  };
  std::vector<Range> written;
  for (const P2PTransfer& t : transfers)
    if (!t.isSend && t.bytes > 0) {
      const auto begin = reinterpret_cast<uintptr_t>(t.recvBuffer);
      written.push_back({begin, begin + t.bytes});
    }
  if (written.empty()) return transfers;
  std::sort(written.begin(), written.end(),
            [](const Range& a, const Range& b) { return a.begin < b.begin; });
  // furthestEnd[i]: the largest end among the first i + 1 ranges, so that one binary search
  // answers "does any range overlap [begin, end)".
  std::vector<uintptr_t> furthestEnd(written.size());
  for (size_t i = 0; i < written.size(); ++i)
    furthestEnd[i] = std::max(written[i].end, i > 0 ? furthestEnd[i - 1] : 0);
  std::vector<P2PTransfer> staged = transfers;
  for (P2PTransfer& t : staged) {
    if (!t.isSend || t.bytes == 0) continue;
    const auto begin = reinterpret_cast<uintptr_t>(t.sendBuffer);
    const auto end = begin + t.bytes;
    const auto startsBefore =
        std::lower_bound(written.begin(), written.end(), end,
                         [](const Range& range, uintptr_t value) { return range.begin < value; });
    if (startsBefore == written.begin()) continue;
    if (furthestEnd[static_cast<size_t>(startsBefore - written.begin()) - 1] <= begin) continue;
    const auto* data = static_cast<const char*>(t.sendBuffer);
    t.sendBuffer = copies.emplace_back(data, data + t.bytes).data();
  }
  return staged;
}

}  // namespace

void runTransfers(OpContext& ctx, const std::vector<P2PTransfer>& original) {
  std::vector<std::vector<char>> copies;
  const std::vector<P2PTransfer> transfers = stageOverwrittenSends(original, copies);
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
