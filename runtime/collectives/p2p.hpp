// Point-to-point transfers issued together (a group, or the steps of an alltoall). None of them
// blocks: the loop moves whatever can move on every connection, so a pair of ranks that send to
// each other and receive from each other in any order cannot deadlock. Several transfers to one
// peer go out in the order given, and the receiver takes them in its own order, as with NCCL.
// A receive from kAnySource looks at the next message of every other rank without taking it and
// takes the first that is a send's, whole, from that rank alone (MPI_ANY_SOURCE's matching).
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "runtime/collectives/op_context.hpp"
#include "runtime/collectives/p2p_transfer.hpp"

namespace tutti::runtime {

// `joining`, when given, is asked for more transfers (issued after these, none to this rank itself)
// between rounds; they run in the same loop, after those before them on their (peer, direction).
using MoreTransfers = std::function<std::vector<P2PTransfer>()>;
void runTransfers(OpContext& ctx, const std::vector<P2PTransfer>& transfers,
                  const MoreTransfers& joining = nullptr);

}  // namespace tutti::runtime
