// Direct all-reduce, for buffers in registered memory (tutti_mem_alloc) on every rank of one host
// (direct.hpp: reaching them, or falling back): each rank reduces its block of every rank's input,
// read straight from the peers' memory, and writes the result into every rank's output. Each byte
// is read once and written once per rank instead of going through FIFO slots (written by one
// rank, read by the next) as in the ring: from 1 to 16 MiB on 2 ranks about twice the ring's busbw
// (README, "Measured").
//
// Only block r's owner, rank r, touches block r of any buffer, reading it before writing it
// (kernels::reduce works block by block), so in place needs no barrier between the reads and the
// writes; the barrier at the end says that every output is complete and no input is read any
// more. Every element is reduced once, folding ranks in rank order: all ranks hold identical
// bits, run after run.
#include <utility>

#include "runtime/collectives/chunking.hpp"
#include "runtime/collectives/direct.hpp"

namespace tutti::runtime {

void allreduceDirect(OpContext& ctx, const CollectiveArgs& args) {
  const auto peers =
      reachPeers(ctx, PeerAccess::kReadSendWriteRecv, args.send, ctx.bytes, args.recv, ctx.bytes);
  if (!peers) return runInstead(ctx, Collective::kAllReduce, args);
  const int n = ctx.comm.size(), r = ctx.comm.rank();
  const Range mine = evenSplit(args.count, static_cast<size_t>(n), static_cast<size_t>(r));
  const size_t offset = mine.offset * ctx.typeSize();
  std::vector<void*> outputs;
  for (std::byte* recv : peers->recv) outputs.push_back(recv + offset);
  std::swap(outputs[0], outputs[static_cast<size_t>(r)]);  // avg finishes in this rank's own
  reduceFromPeers(ctx, *peers, offset, outputs, mine.count);
  barrier(ctx);
}

}  // namespace tutti::runtime
