// The small rounds the direct algorithms run besides moving data (direct.hpp): the offers
// (direct_offer.hpp), in which every rank says what it calls, where its buffers are and which
// process it is (the peer-memory offer of the transport's access, transport/peer_memory.hpp),
// checked to be the same call everywhere; and one-byte votes, which double as
// barriers.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/collectives/direct_offer.hpp"
#include "runtime/collectives/op_context.hpp"

namespace tutti::runtime {

Offer offerOf(const OpContext& ctx, bool wantsRecv, const void* send, size_t sendBytes,
              const void* recv, size_t recvBytes);

// Every rank's offer, in rank order.
std::vector<Offer> exchangeOffers(OpContext& ctx, const Offer& mine);

// kInvalidUsage, naming both calls, when some rank's call differs from this rank's.
void requireSameCall(const OpContext& ctx, const std::vector<Offer>& offers);

// True on every rank when `mine` is true on every rank; also a barrier.
bool everyRank(OpContext& ctx, bool mine);

}  // namespace tutti::runtime
