// Direct reduce-scatter on one host (direct.hpp): rank r reduces block r of every rank's input,
// read straight from the peers' memory in rank order, into its output. One pass over memory
// instead of the ring's n-1 hops through FIFO slots; a final barrier keeps every input in use
// until all ranks have read it.
//
// Inputs read through the kernel are copied into a staging buffer before the reduction, which
// the ring's copy into a FIFO slot beats from about 8 MiB (2 ranks, TUTTI_DIRECT_BUFFERS=any
// against registered, three alternated runs of tutti-bench reducescatter -n 30, busbw GB/s out
// of place: 1 MiB 3.9-6.1 against 3.9-5.3, 16 MiB 2.9-4.3 against 3.6-4.3, 32 MiB 2.0-2.9
// against 2.8-3.1; 64 MiB 1.6-1.8 against 2.0-2.4): there the ring runs.
#include "runtime/collectives/direct.hpp"

namespace tutti::runtime {
namespace {

constexpr size_t kThroughKernelMaxBytes = 8 << 20;

}  // namespace

void reduceScatterDirect(OpContext& ctx, const CollectiveArgs& args) {
  const auto peers = reachPeers(ctx, PeerAccess::kSend, args.send, ctx.bytes);
  if (!peers || (peers->sendThroughKernel && ctx.bytes > kThroughKernelMaxBytes))
    return runInstead(ctx, Collective::kReduceScatter, args);
  const size_t offset = static_cast<size_t>(ctx.comm.rank()) * args.count * ctx.typeSize();
  // In place, args.recv is this rank's own block of its input.
  reduceFromPeers(ctx, *peers, offset, {&args.recv, 1}, args.count);
  finish(ctx, *peers);
}

}  // namespace tutti::runtime
