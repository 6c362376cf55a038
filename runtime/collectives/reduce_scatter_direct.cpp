// Direct reduce-scatter, for send buffers in registered memory on every rank of one host
// (direct.hpp): rank r reduces block r of every rank's input, read straight from the peers'
// memory in rank order, into its output. One pass over memory instead of the ring's n-1 hops
// through FIFO slots; a final barrier keeps every input in use until all ranks have read it.
#include "kernels/kernels.hpp"
#include "runtime/collectives/direct.hpp"

namespace tutti::runtime {

void reduceScatterDirect(OpContext& ctx, const CollectiveArgs& args) {
  const auto peers = reachPeers(ctx, PeerReads::kSend, args.send, ctx.bytes);
  if (!peers) return runInstead(ctx, Collective::kReduceScatter, args);
  const size_t blockBytes = args.count * ctx.typeSize();
  const size_t offset = static_cast<size_t>(ctx.comm.rank()) * blockBytes;
  std::vector<const void*> inputs(peers->send.size());
  for (size_t rank = 0; rank < inputs.size(); ++rank) inputs[rank] = peers->send[rank] + offset;
  void* out = args.recv;  // in place: this rank's own block of its input
  kernels::reduce(&out, 1, inputs.data(), static_cast<int>(inputs.size()), args.count, ctx.dtype,
                  ctx.op);
  finishAverage(ctx, out, args.count);
  barrier(ctx);
}

}  // namespace tutti::runtime
