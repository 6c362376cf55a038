#include "runtime/collectives/direct.hpp"

#include <cstring>
#include <string>

#include "kernels/kernels.hpp"
#include "runtime/collectives/p2p.hpp"
#include "runtime/memory/registered_memory.hpp"

namespace tutti::runtime {
namespace {

// Plain bytes (no bool): it comes from another process.
struct Offer {
  char collective[16] = {};  // its name, so that an allgather never meets a reduce-scatter
  uint64_t bytes = 0;
  uint8_t dtype = 0, op = 0;
  uint8_t sendRegistered = 0, recvRegistered = 0;
  RegisteredRange send, recv;
};

Offer offerOf(const OpContext& ctx, bool wantsRecv, const void* send, size_t sendBytes,
              const void* recv, size_t recvBytes) {
  Offer offer;
  std::strncpy(offer.collective, ctx.collective, sizeof offer.collective - 1);
  offer.bytes = ctx.bytes;
  offer.dtype = static_cast<uint8_t>(ctx.dtype);
  offer.op = static_cast<uint8_t>(ctx.op);
  if (ctx.comm.localSize() != ctx.comm.size()) return offer;
  if (const auto range = findRegistered(send, sendBytes)) {
    offer.sendRegistered = 1;
    offer.send = *range;
  }
  if (const auto range = wantsRecv ? findRegistered(recv, recvBytes) : std::nullopt) {
    offer.recvRegistered = 1;
    offer.recv = *range;
  }
  return offer;
}

// "allreduce with 800000 bytes of float32 (sum)"; allgather has no operation to name.
std::string describeCall(const char* collective, uint64_t bytes, uint8_t dtype, uint8_t op) {
  std::string call = fmt::format("{} with {} bytes of {}", collective, bytes,
                                 kernels::typeName(static_cast<kernels::DataType>(dtype)));
  if (std::strcmp(collective, collectiveName(Collective::kAllGather)) != 0)
    call += fmt::format(" ({})", kernels::opName(static_cast<kernels::RedOp>(op)));
  return call;
}

void checkSameCall(const OpContext& ctx, const std::vector<Offer>& offers) {
  const Offer& mine = offers[static_cast<size_t>(ctx.comm.rank())];
  for (size_t peer = 0; peer < offers.size(); ++peer) {
    Offer theirs = offers[peer];
    theirs.collective[sizeof theirs.collective - 1] = '\0';  // whatever the peer sent
    if (std::strcmp(theirs.collective, mine.collective) == 0 && theirs.bytes == mine.bytes &&
        theirs.dtype == mine.dtype && theirs.op == mine.op)
      continue;
    raise(ErrorCode::kInvalidUsage,
          "{}: rank {} calls {} where this rank calls {}: the ranks called different "
          "collectives, counts or types",
          ctx.where(), peer, describeCall(theirs.collective, theirs.bytes, theirs.dtype, theirs.op),
          describeCall(mine.collective, mine.bytes, mine.dtype, mine.op));
  }
}

// Every rank's offer, in rank order.
std::vector<Offer> exchangeOffers(OpContext& ctx, const Offer& mine) {
  const int r = ctx.comm.rank();
  std::vector<Offer> offers(static_cast<size_t>(ctx.comm.size()));
  offers[static_cast<size_t>(r)] = mine;
  std::vector<P2PTransfer> exchange;
  for (int peer = 0; peer < ctx.comm.size(); ++peer) {
    if (peer == r) continue;
    exchange.push_back({true, peer, &mine, nullptr, sizeof mine});
    exchange.push_back({false, peer, nullptr, &offers[static_cast<size_t>(peer)], sizeof mine});
  }
  runTransfers(ctx, exchange);
  return offers;
}

// True on every rank when `mine` is true on every rank; also a barrier.
bool everyRank(OpContext& ctx, bool mine) {
  uint8_t flag = mine ? 1 : 0;
  OpContext vote{ctx.comm,
                 ctx.collective,
                 ctx.algorithm,
                 ctx.sequence,
                 1,
                 kernels::DataType::kUint8,
                 kernels::RedOp::kMin};
  allreduceOneShot(vote, {&flag, &flag, 1, 0});
  return flag == 1;
}

}  // namespace

std::optional<DirectPeers> reachPeers(OpContext& ctx, PeerAccess access, const void* send,
                                      size_t sendBytes, void* recv, size_t recvBytes) {
  const int n = ctx.comm.size(), r = ctx.comm.rank();
  const bool wantsRecv = access == PeerAccess::kReadSendWriteRecv;
  const auto offers =
      exchangeOffers(ctx, offerOf(ctx, wantsRecv, send, sendBytes, recv, recvBytes));
  checkSameCall(ctx, offers);
  for (const Offer& offer : offers)
    if (offer.sendRegistered != 1 || (wantsRecv && offer.recvRegistered != 1)) return std::nullopt;

  DirectPeers peers;
  peers.send.resize(static_cast<size_t>(n));
  peers.send[static_cast<size_t>(r)] = static_cast<const std::byte*>(send);
  if (wantsRecv) {
    peers.recv.resize(static_cast<size_t>(n));
    peers.recv[static_cast<size_t>(r)] = static_cast<std::byte*>(recv);
  }
  auto reach = [&](int peer, const RegisteredRange& range, size_t bytes) {
    return ctx.comm.peerBuffers().map(peer, ctx.comm.peer(peer).pid, range, bytes);
  };
  bool reachable = true;
  for (int peer = 0; reachable && peer < n; ++peer) {
    if (peer == r) continue;
    const auto p = static_cast<size_t>(peer);
    peers.send[p] = reach(peer, offers[p].send, sendBytes);
    if (wantsRecv) peers.recv[p] = reach(peer, offers[p].recv, recvBytes);
    reachable = peers.send[p] && (!wantsRecv || peers.recv[p]);
  }
  if (!everyRank(ctx, reachable)) return std::nullopt;
  return peers;
}

void runInstead(OpContext& ctx, Collective collective, const CollectiveArgs& args) {
  const Algorithm& instead = pickAlgorithm(collective, ctx.bytes, ctx.comm, "direct");
  ctx.algorithm = instead.name;
  ctx.comm.recorder().started(ctx.sequence, instead.name);
  instead.run(ctx, args);
}

void reduceFromPeers(OpContext& ctx, const DirectPeers& peers, size_t offset,
                     std::span<void* const> outs, size_t count) {
  std::vector<const void*> inputs(peers.send.size());
  for (size_t rank = 0; rank < inputs.size(); ++rank) inputs[rank] = peers.send[rank] + offset;
  // avg divides after the sum: once, in the first output, whose bits the others then receive.
  const bool average = ctx.op == kernels::RedOp::kAvg;
  kernels::reduce(outs.data(), average ? 1 : static_cast<int>(outs.size()), inputs.data(),
                  static_cast<int>(inputs.size()), count, ctx.dtype, ctx.op);
  if (!average) return;
  finishAverage(ctx, outs[0], count);
  if (outs.size() > 1)
    kernels::copy(outs.data() + 1, static_cast<int>(outs.size() - 1), outs[0],
                  count * ctx.typeSize());
}

void barrier(OpContext& ctx) {
  everyRank(ctx, true);
}

}  // namespace tutti::runtime
