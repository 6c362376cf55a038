// Direct all-reduce, for buffers in registered memory (tutti_mem_alloc) on every rank of one host:
// each rank reads its block of every rank's input straight from the peers' memory, reduces it
// into its own output, and then copies the other ranks' finished blocks out of their outputs.
// Each byte crosses memory once per phase instead of going through a FIFO slot (written by one
// rank, read by the next) as in the ring: at 64 MiB on 2 ranks it takes less than half the ring's
// time and CPU (README, "Measured").
//
// The ranks first exchange where their buffers are (a RegisteredRange each). Unless every rank
// offers registered buffers, all of them run the algorithm the planner would have picked without
// this one, having learned that from the same offers; otherwise they map each other's memory
// and agree that every mapping worked (an all-reduce of one flag) before touching it. Two
// barriers order the phases: nobody copies a block before its owner has finished it, and nobody
// returns (letting its caller reuse the buffer) while a peer may still read it.
//
// Every element is reduced once, by the rank that owns its block, folding ranks in rank order,
// and then copied: all ranks hold identical bits, run after run.
#include <cstring>
#include <vector>

#include "kernels/kernels.hpp"
#include "runtime/collectives/algorithm.hpp"
#include "runtime/collectives/chunking.hpp"
#include "runtime/memory/registered_memory.hpp"

namespace tutti::runtime {
namespace {

// What a rank all-reduces, and where its buffers are when they are registered. Plain bytes (no
// bool) since it comes from another process.
struct Offer {
  uint64_t bytes = 0;
  uint8_t dtype = 0, op = 0;
  uint8_t registered = 0;
  RegisteredRange send, recv;
};

Offer offerOf(const OpContext& ctx, const CollectiveArgs& args) {
  Offer offer;
  offer.bytes = ctx.bytes;
  offer.dtype = static_cast<uint8_t>(ctx.dtype);
  offer.op = static_cast<uint8_t>(ctx.op);
  const auto send = findRegistered(args.send, ctx.bytes);
  const auto recv = findRegistered(args.recv, ctx.bytes);
  if (ctx.comm.localSize() == ctx.comm.size() && send && recv) {
    offer.registered = 1;
    offer.send = *send;
    offer.recv = *recv;
  }
  return offer;
}

// The ring notices ranks that disagree on the call when a slot's size differs; reading the
// peers' memory directly would not, so the offers say what each rank all-reduces.
void checkSameCall(const OpContext& ctx, const std::vector<Offer>& offers) {
  for (size_t peer = 0; peer < offers.size(); ++peer) {
    const Offer& theirs = offers[peer];
    if (theirs.bytes == ctx.bytes && theirs.dtype == static_cast<uint8_t>(ctx.dtype) &&
        theirs.op == static_cast<uint8_t>(ctx.op))
      continue;
    raise(ErrorCode::kInvalidUsage,
          "{}: rank {} all-reduces {} bytes of {} ({}) where this rank all-reduces {} bytes of {} "
          "({}): the ranks called different collectives, counts or types",
          ctx.where(), peer, theirs.bytes,
          kernels::typeName(static_cast<kernels::DataType>(theirs.dtype)),
          kernels::opName(static_cast<kernels::RedOp>(theirs.op)), ctx.bytes,
          kernels::typeName(ctx.dtype), kernels::opName(ctx.op));
  }
}

// Every rank's offer, in rank order.
std::vector<Offer> exchangeOffers(OpContext& ctx, const Offer& mine) {
  const int n = ctx.comm.size(), r = ctx.comm.rank();
  std::vector<Offer> offers(static_cast<size_t>(n));
  offers[static_cast<size_t>(r)] = mine;
  for (int peer = 0; peer < n; ++peer) {
    if (peer == r) continue;
    // Copied into the slot, not posted from `mine`: tcp would keep the pointer until the drain.
    std::memcpy(ctx.acquire(peer), &mine, sizeof mine);
    ctx.post(peer, sizeof mine);
  }
  for (int peer = 0; peer < n; ++peer) {
    if (peer == r) continue;
    std::memcpy(&offers[static_cast<size_t>(peer)], ctx.peek(peer, sizeof(Offer)), sizeof(Offer));
    ctx.release(peer);
  }
  return offers;
}

// True on every rank when `mine` is true on every rank; also a barrier.
bool everyRank(OpContext& ctx, bool mine) {
  uint8_t flag = mine ? 1 : 0;
  OpContext agreement{ctx.comm,
                      ctx.collective,
                      ctx.algorithm,
                      ctx.sequence,
                      1,
                      kernels::DataType::kUint8,
                      kernels::RedOp::kMin};
  allreduceOneShot(agreement, {&flag, &flag, 1, 0});
  return flag == 1;
}

}  // namespace

void allreduceDirect(OpContext& ctx, const CollectiveArgs& args) {
  const int n = ctx.comm.size(), r = ctx.comm.rank();
  const auto offers = exchangeOffers(ctx, offerOf(ctx, args));
  checkSameCall(ctx, offers);
  // Every rank knows from the offers whether all offered; only the mappings need a vote.
  bool allOffered = true;
  for (const Offer& offer : offers) allOffered = allOffered && offer.registered == 1;
  bool reachable = allOffered;
  std::vector<const std::byte*> inputs(static_cast<size_t>(n));
  std::vector<const std::byte*> outputs(static_cast<size_t>(n));
  inputs[static_cast<size_t>(r)] = static_cast<const std::byte*>(args.send);
  for (int peer = 0; reachable && peer < n; ++peer) {
    if (peer == r) continue;
    const Offer& offer = offers[static_cast<size_t>(peer)];
    const long pid = ctx.comm.peer(peer).pid;
    inputs[static_cast<size_t>(peer)] =
        ctx.comm.peerBuffers().map(peer, pid, offer.send, ctx.bytes);
    outputs[static_cast<size_t>(peer)] =
        ctx.comm.peerBuffers().map(peer, pid, offer.recv, ctx.bytes);
    reachable = inputs[static_cast<size_t>(peer)] && outputs[static_cast<size_t>(peer)];
  }
  if (!allOffered || !everyRank(ctx, reachable)) {
    const Algorithm& instead = pickAlgorithm(Collective::kAllReduce, ctx.bytes, ctx.comm, "direct");
    ctx.algorithm = instead.name;
    ctx.comm.recorder().started(ctx.sequence, instead.name);
    return instead.run(ctx, args);
  }

  const size_t size = ctx.typeSize();
  auto* out = static_cast<std::byte*>(args.recv);
  const Range mine = evenSplit(args.count, static_cast<size_t>(n), static_cast<size_t>(r));
  std::vector<const void*> blockInputs(static_cast<size_t>(n));
  for (int rank = 0; rank < n; ++rank)
    blockInputs[static_cast<size_t>(rank)] = inputs[static_cast<size_t>(rank)] + mine.offset * size;
  void* myBlock = out + mine.offset * size;
  kernels::reduce(&myBlock, 1, blockInputs.data(), n, mine.count, ctx.dtype, ctx.op);
  finishAverage(ctx, myBlock, mine.count);
  everyRank(ctx, true);  // every block is final
  for (int peer = 0; peer < n; ++peer) {
    if (peer == r) continue;
    const Range theirs = evenSplit(args.count, static_cast<size_t>(n), static_cast<size_t>(peer));
    void* dst = out + theirs.offset * size;
    kernels::copy(&dst, 1, outputs[static_cast<size_t>(peer)] + theirs.offset * size,
                  theirs.count * size);
  }
  everyRank(ctx, true);  // no peer reads this rank's buffers any more
}

}  // namespace tutti::runtime
