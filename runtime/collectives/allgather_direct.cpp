// Direct allgather, for send buffers in registered memory on every rank of one host (direct.hpp):
// each rank copies every peer's block straight out of the peer's send buffer to its offset in the
// output, one copy per block instead of one per ring hop through a FIFO slot. A final barrier
// keeps every send buffer in use until all ranks have read it.
#include "runtime/collectives/direct.hpp"

namespace tutti::runtime {

void allgatherDirect(OpContext& ctx, const CollectiveArgs& args) {
  const size_t blockBytes = args.count * ctx.typeSize();
  const auto peers = reachPeers(ctx, PeerAccess::kSend, args.send, blockBytes);
  if (!peers) return runInstead(ctx, Collective::kAllGather, args);
  for (size_t rank = 0; rank < peers->send.size(); ++rank)
    copyFromPeer(ctx, peers->send[rank], 0, static_cast<std::byte*>(args.recv) + rank * blockBytes,
                 blockBytes);
  finish(ctx, *peers);
}

}  // namespace tutti::runtime
