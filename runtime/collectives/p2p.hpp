// Point-to-point transfers issued together (a group, or the steps of an alltoall). None of them
// blocks: the loop moves whatever can move on every connection, so a pair of ranks that send to
// each other and receive from each other in any order cannot deadlock. Several transfers to one
// peer go out in the order given, and the receiver takes them in its own order, as with NCCL.
#pragma once

#include <cstddef>
#include <vector>

#include "runtime/collectives/op_context.hpp"

namespace tutti::runtime {

struct P2PTransfer {
  bool isSend;
  int peer;
  const void* sendBuffer;  // isSend
  void* recvBuffer;        // !isSend
  size_t bytes;
};

void runTransfers(OpContext& ctx, const std::vector<P2PTransfer>& transfers);

}  // namespace tutti::runtime
