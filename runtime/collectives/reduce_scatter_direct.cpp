// Direct reduce-scatter on one host (direct.hpp): rank r reduces block r of every rank's input,
// read straight from the peers' memory in rank order, into its output. One pass over memory
// instead of the ring's n-1 hops through FIFO slots; a final barrier keeps every input in use
// until all ranks have read it.
//
// Inputs read through the kernel are copied into a staging buffer before the reduction, which
// the ring's copy into a FIFO slot beats from some size on (the tuning table's
// reduce_scatter_kernel_max_bytes): there the ring runs.
#include "runtime/collectives/direct.hpp"

namespace tutti::runtime {

void reduceScatterDirect(OpContext& ctx, const CollectiveArgs& args) {
  const auto peers = reachPeers(ctx, PeerAccess::kSend, args.send, ctx.bytes);
  if (!peers || (peers->sendThroughKernel &&
                 ctx.bytes > ctx.group.settings.tuning.reduceScatterKernelMaxBytes))
    return runInstead(ctx, Collective::kReduceScatter, args);
  const size_t offset = static_cast<size_t>(ctx.group.rank) * args.count * ctx.typeSize();
  // In place, args.recv is this rank's own block of its input.
  reduceFromPeers(ctx, *peers, offset, {&args.recv, 1}, args.count);
  finish(ctx, *peers);
}

}  // namespace tutti::runtime
