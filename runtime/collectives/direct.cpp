#include "runtime/collectives/direct.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "kernels/kernels.hpp"
#include "runtime/collectives/direct_rounds.hpp"

namespace tutti::runtime {
namespace {

using transport::BufferReach;

// Which ways some rank reaches some other's buffer; nullopt when one cannot be reached at all.
struct Ways {
  bool sendKernel = false, recvKernel = false, mapping = false;
};
std::optional<Ways> waysOfReaching(const std::vector<Offer>& offers, bool wantsRecv) {
  Ways ways;
  for (const Offer& reader : offers)
    for (const Offer& owner : offers) {
      if (&reader == &owner) continue;
      const BufferReach send = reachOf(reader.memory, owner.memory, owner.memory.send);
      const BufferReach recv =
          wantsRecv ? reachOf(reader.memory, owner.memory, owner.memory.recv) : send;
      if (send == BufferReach::kNone || recv == BufferReach::kNone) return std::nullopt;
      ways.sendKernel |= send == BufferReach::kKernel;
      ways.recvKernel |= wantsRecv && recv == BufferReach::kKernel;
      ways.mapping |= send == BufferReach::kMapping || recv == BufferReach::kMapping;
    }
  return ways;
}

// Whether the kernel copies between this rank and every peer in another process: found out by
// all ranks together at the first call that needs it, then remembered.
bool kernelCopies(OpContext& ctx, transport::PeerMemory& memory, const std::vector<Offer>& offers) {
  std::optional<bool>& known = memory.kernelCopies;
  if (!known) {
    const Offer& mine = offers[static_cast<size_t>(ctx.group.rank)];
    bool works = true;
    for (int peer = 0; works && peer < ctx.group.size; ++peer) {
      const Offer& theirs = offers[static_cast<size_t>(peer)];
      if (!sameProcess(mine.memory, theirs.memory))
        works = transport::PeerMemory::kernelReaches(ctx.group.peer(peer).pid, theirs.memory);
    }
    known = everyRank(ctx, works);
  }
  return *known;
}

// DirectPeers' window of trust: the shortest timeout among the ranks, from this rank's offer.
DirectPeers trustWindow(const std::vector<Offer>& offers,
                        std::chrono::steady_clock::time_point offered) {
  DirectPeers peers;
  for (size_t peer = 0; peer < offers.size(); ++peer)
    if (offers[peer].timeoutMs < offers[static_cast<size_t>(peers.shortestTimeoutRank)].timeoutMs)
      peers.shortestTimeoutRank = static_cast<int>(peer);
  peers.offered = offered;
  peers.shortestTimeout =
      std::chrono::milliseconds(offers[static_cast<size_t>(peers.shortestTimeoutRank)].timeoutMs);
  return peers;
}

}  // namespace

std::optional<DirectPeers> reachPeers(OpContext& ctx, PeerAccess access, const void* send,
                                      size_t sendBytes, void* recv, size_t recvBytes) {
  const bool wantsRecv = access == PeerAccess::kSendAndRecv;
  const auto offered = std::chrono::steady_clock::now();
  const auto offers =
      exchangeOffers(ctx, offerOf(ctx, wantsRecv, send, sendBytes, recv, recvBytes));
  requireSameCall(ctx, offers);
  const auto ways = waysOfReaching(offers, wantsRecv);
  if (!ways) return std::nullopt;
  // Offers reach a peer only through the transport's access to every peer's memory.
  transport::PeerMemory* memory = ctx.group.connections.peerMemory();
  if ((ways->sendKernel || ways->recvKernel) && !kernelCopies(ctx, *memory, offers))
    return std::nullopt;

  DirectPeers peers = trustWindow(offers, offered);
  peers.someInPlace = wantsRecv && std::ranges::any_of(offers, [](const Offer& offer) {
                        return offer.memory.send.address == offer.memory.recv.address;
                      });
  peers.forcedEverywhere =
      std::ranges::all_of(offers, [](const Offer& offer) { return offer.forced; });
  peers.sendThroughKernel = ways->sendKernel;
  peers.recvThroughKernel = ways->recvKernel;
  const int r = ctx.group.rank;
  bool mapped = true;
  auto reach = [&](int peer, const transport::BufferOffer& buffer, size_t bytes) {
    const auto view =
        memory->open(peer, ctx.group.peer(peer).pid, offers[static_cast<size_t>(r)].memory,
                     offers[static_cast<size_t>(peer)].memory, buffer, bytes);
    mapped = mapped && view.has_value();
    return PeerBuffer{peer, view.value_or(transport::PeerView{})};
  };
  for (int peer = 0; peer < ctx.group.size; ++peer) {
    const Offer& offer = offers[static_cast<size_t>(peer)];
    peers.send.push_back(peer == r
                             ? PeerBuffer{r, {static_cast<std::byte*>(const_cast<void*>(send))}}
                             : reach(peer, offer.memory.send, sendBytes));
    if (wantsRecv)
      peers.recv.push_back(peer == r ? PeerBuffer{r, {static_cast<std::byte*>(recv)}}
                                     : reach(peer, offer.memory.recv, recvBytes));
  }
  if (ways->mapping && !everyRank(ctx, mapped)) return std::nullopt;
  return peers;
}

void runInstead(OpContext& ctx, Collective collective, const CollectiveArgs& args) {
  const Algorithm& instead = pickAlgorithm(collective, ctx.bytes, ctx.group, "direct");
  ctx.algorithm = instead.name;
  ctx.recordAlgorithm(instead.name);
  instead.run(ctx, args);
}

void copyFromPeer(OpContext& ctx, const PeerBuffer& from, size_t offset, void* to, size_t bytes) {
  // Fails only through the kernel, after the ranks agreed that it copies: the peer is gone
  // (ESRCH), or a buffer is not what its owner said (EFAULT), most often because the peer gave up
  // and released it. The peer watch tells which (its departure note, or its death).
  const int error = from.memory.copyTo(offset, to, bytes);
  if (error == 0) return;
  if (const auto trouble = ctx.explainLost(from.rank))
    ctx.raiseTrouble(*trouble, fmt::format("to read rank {}'s buffer", from.rank));
  raise(ErrorCode::kSystem,
        "{}: copying from rank {} ({})'s buffer at {:#x} through the kernel failed: {}",
        ctx.where(), from.rank, describe(ctx.group.peer(from.rank)), from.memory.remote + offset,
        std::strerror(error));
}

void reduceFromPeers(OpContext& ctx, const DirectPeers& peers, size_t offset,
                     std::span<void* const> outs, size_t count) {
  const bool staged =
      std::ranges::any_of(peers.send, [](const PeerBuffer& b) { return !b.memory.local; });
  const size_t typeSize = ctx.typeSize(), ranks = peers.send.size();
  const size_t step =
      staged ? ctx.group.settings.tuning.directStagedBytes / typeSize : std::max<size_t>(1, count);
  // Only reads through the kernel are staged, so the transport's peer memory is there.
  std::byte* staging =
      staged ? ctx.group.connections.peerMemory()->staging(ranks * step * typeSize) : nullptr;
  // avg divides after the sum: once, in the first output, whose bits the others then receive.
  const bool average = ctx.op == kernels::RedOp::kAvg;
  std::vector<const void*> inputs(ranks);
  std::vector<void*> pieces(outs.size());
  for (size_t done = 0; done < count; done += step) {
    const size_t elements = std::min(step, count - done), bytes = elements * typeSize;
    const size_t at = offset + done * typeSize;
    for (size_t rank = 0; rank < ranks; ++rank) {
      const PeerBuffer& input = peers.send[rank];
      if (input.memory.local) {
        inputs[rank] = input.memory.local + at;
        continue;
      }
      std::byte* copy = staging + rank * step * typeSize;
      copyFromPeer(ctx, input, at, copy, bytes);
      inputs[rank] = copy;
    }
    for (size_t i = 0; i < outs.size(); ++i)
      pieces[i] = static_cast<std::byte*>(outs[i]) + done * typeSize;
    kernels::reduce(pieces.data(), average ? 1 : static_cast<int>(pieces.size()), inputs.data(),
                    static_cast<int>(ranks), elements, ctx.dtype, ctx.op);
    if (!average) continue;
    finishAverage(ctx, pieces[0], elements);
    if (pieces.size() > 1)
      kernels::copy(pieces.data() + 1, static_cast<int>(pieces.size() - 1), pieces[0], bytes);
  }
}

void barrier(OpContext& ctx) {
  everyRank(ctx, true);
}

void finish(OpContext& ctx, const DirectPeers& peers) {
  barrier(ctx);
  using std::chrono::duration_cast, std::chrono::milliseconds;
  const auto took = duration_cast<milliseconds>(std::chrono::steady_clock::now() - peers.offered);
  if (took < peers.shortestTimeout) return;
  // Peers that gave up meanwhile (this rank was stopped, most often) say why: theirs is the
  // communicator's reason, this rank's lateness only its echo.
  if (const auto trouble = ctx.troubleAnywhere())
    ctx.raiseTrouble(*trouble, "to finish reading its peers' buffers");
  raise(ErrorCode::kTimeout,
        "{}: this rank finished {} ms after it offered its buffers, past rank {}'s timeout of {} "
        "ms: that rank may have given up on the operation and reused the buffers this rank read, "
        "so the result is not trusted (was this rank stopped, or starved of CPU? a larger "
        "TUTTI_TIMEOUT covers longer operations)",
        ctx.where(), took.count(), peers.shortestTimeoutRank, peers.shortestTimeout.count());
}

}  // namespace tutti::runtime
