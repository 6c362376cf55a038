// Direct all-reduce on one host (direct.hpp: reaching the peers' buffers, or falling back): each
// rank reduces its block of every rank's input, read straight from the peers' memory, folding
// ranks in rank order, so every element is reduced once and all ranks hold identical bits, run
// after run. Each byte is read once per rank instead of going through FIFO slots (written by one
// rank, read by the next) as in the ring.
//
// Push, when every rank's output is mapped here (registered memory, or a thread world): the
// reduction writes the block into every rank's output at once. Only block r's owner, rank r,
// touches block r of any buffer, reading it before writing it (kernels::reduce works block by
// block), so in place needs no barrier between the reads and the writes; the barrier at the end
// says that every output is complete and no input is read any more. From 1 to 16 MiB on 2 ranks
// about twice the ring's busbw (README, "Measured").
//
// Pull, when some output is only reachable through the kernel, which is never written into (a
// peer that gave up could have reused it): each rank reduces its block into its own output, a
// barrier, then each copies the other blocks out of their owners' outputs. The blocks the
// owners have just written cross between cores' caches once more than in the push, which costs
// enough that the pull beats the ring only in the tuning table's direct_pull_out_of_place and
// direct_pull_in_place ranges (tuning_defaults.cpp has the sweep); elsewhere the planner's other
// choice runs. In place only for 2 ranks: 4 ranks on 2 cores tie with the ring or lose, and
// nothing else every rank knows alike tells more cores from fewer.

#include <vector>

#include "runtime/collectives/chunking.hpp"
#include "runtime/collectives/direct.hpp"

namespace tutti::runtime {
namespace {

// Whether the pull is worth it; the same on every rank, which all see the same offers.
bool pullPays(const OpContext& ctx, const DirectPeers& peers) {
  return peers.forcedEverywhere ||
         directPullPays(ctx.group.settings.tuning, ctx.bytes, ctx.group.size, peers.someInPlace)
             .pays;
}

}  // namespace

PullVerdict directPullPays(const Tuning& tuning, size_t bytes, int n, bool someInPlace) {
  if (someInPlace && n != 2) return {false, nullptr};
  const SizeRange& pays = someInPlace ? tuning.directPullInPlace : tuning.directPullOutOfPlace;
  return {pays.holds(bytes), &pays};
}

void allreduceDirect(OpContext& ctx, const CollectiveArgs& args) {
  const auto peers =
      reachPeers(ctx, PeerAccess::kSendAndRecv, args.send, ctx.bytes, args.recv, ctx.bytes);
  if (!peers) return runInstead(ctx, Collective::kAllReduce, args);
  const auto n = static_cast<size_t>(ctx.group.size), r = static_cast<size_t>(ctx.group.rank);
  const size_t typeSize = ctx.typeSize();
  const Range mine = evenSplit(args.count, n, r);
  auto blockOf = [&](void* buffer, const Range& block) -> void* {
    return static_cast<std::byte*>(buffer) + block.offset * typeSize;
  };
  // Every rank decides alike, from the offers: with some outputs registered and some not, the
  // ranks that map all of theirs would push while the others pull.
  const bool push = !peers->recvThroughKernel;
  if (!push && !pullPays(ctx, *peers)) return runInstead(ctx, Collective::kAllReduce, args);
  if (push) {
    std::vector<void*> outputs{blockOf(args.recv, mine)};
    for (const PeerBuffer& recv : peers->recv)
      if (recv.rank != ctx.group.rank) outputs.push_back(blockOf(recv.memory.local, mine));
    reduceFromPeers(ctx, *peers, mine.offset * typeSize, outputs, mine.count);
  } else {  // pull
    void* output = blockOf(args.recv, mine);
    reduceFromPeers(ctx, *peers, mine.offset * typeSize, {&output, 1}, mine.count);
    barrier(ctx);
    for (size_t rank = 0; rank < n; ++rank) {
      const Range block = evenSplit(args.count, n, rank);
      if (rank != r)
        copyFromPeer(ctx, peers->recv[rank], block.offset * typeSize, blockOf(args.recv, block),
                     block.count * typeSize);
    }
  }
  finish(ctx, *peers);
}

}  // namespace tutti::runtime
