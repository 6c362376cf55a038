// Pairwise alltoall: block k of every rank goes to rank k. All n-1 exchanges are issued at once
// (p2p.hpp), rank r sending to r+1, r+2, ... and receiving from r-1, r-2, ... so that at any time
// the pairs differ; the own block is a local copy. In-place, the input is first set aside, since
// incoming blocks overwrite it.
#include <cstring>
#include <vector>

#include "runtime/collectives/algorithm.hpp"
#include "runtime/collectives/chunking.hpp"
#include "runtime/collectives/p2p.hpp"

namespace tutti::runtime {

void alltoallPairwise(OpContext& ctx, const CollectiveArgs& args) {
  const int n = ctx.group.size, r = ctx.group.rank;
  const size_t blockBytes = args.count * ctx.typeSize();
  const char* src = static_cast<const char*>(args.send);
  char* dst = static_cast<char*>(args.recv);
  std::vector<char> saved;
  if (src == dst) {
    saved.assign(src, src + blockBytes * static_cast<size_t>(n));
    src = saved.data();
  }
  std::vector<P2PTransfer> transfers;
  for (int k = 1; k < n; ++k) {
    const int to = modRank(r + k, n), from = modRank(r - k, n);
    transfers.push_back(
        {true, to, src + blockBytes * static_cast<size_t>(to), nullptr, blockBytes});
    transfers.push_back(
        {false, from, nullptr, dst + blockBytes * static_cast<size_t>(from), blockBytes});
  }
  if (blockBytes > 0)
    std::memmove(dst + blockBytes * static_cast<size_t>(r),
                 src + blockBytes * static_cast<size_t>(r), blockBytes);
  runTransfers(ctx, transfers);
}

}  // namespace tutti::runtime
