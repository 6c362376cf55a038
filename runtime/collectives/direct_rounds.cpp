#include "runtime/collectives/direct_rounds.hpp"

#include "kernels/kernels.hpp"
#include "runtime/collectives/algorithm.hpp"
#include "runtime/collectives/p2p.hpp"

namespace tutti::runtime {
namespace {

#if defined(__SANITIZE_THREAD__)
#define TUTTI_THREAD_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TUTTI_THREAD_SANITIZER 1
#endif
#endif
#ifdef TUTTI_THREAD_SANITIZER
extern "C" void __tsan_acquire(void* address);
extern "C" void __tsan_release(void* address);
#endif

// The ranks of a thread world reach each other's buffers at their own addresses, and order
// their accesses by rounds through shared-memory FIFOs that every rank maps at an address of its
// own, which ThreadSanitizer cannot pair. Around each round, tell it what the round does: what
// any rank did before it happens before what every rank does after it.
template <typename Round>
auto orderedRound(Round round) {
#ifdef TUTTI_THREAD_SANITIZER
  static char order;
  __tsan_release(&order);
  auto result = round();
  __tsan_acquire(&order);
  return result;
#else
  return round();
#endif
}

}  // namespace

Offer offerOf(const OpContext& ctx, bool wantsRecv, const void* send, size_t sendBytes,
              const void* recv, size_t recvBytes) {
  Offer offer;
  offer.call = ctx.call;
  offer.timeoutMs = static_cast<uint64_t>(ctx.timeout().count());
  const Algorithm* forced = ctx.group.settings.algorithm;  // TUTTI_ALGO=direct
  offer.forced = forced && forced->run == allreduceDirect;
  // Without the transport's access to every peer's memory, nothing is reachable.
  if (!ctx.group.connections.peerMemory()) return offer;
  offer.memory =
      transport::PeerMemory::offer(ctx.group.settings.directBuffers == DirectBuffers::kAny, send,
                                   sendBytes, wantsRecv ? recv : nullptr, recvBytes);
  return offer;
}

void requireSameCall(const OpContext& ctx, const std::vector<Offer>& offers) {
  const int self = ctx.group.rank;
  for (int peer = 0; peer < static_cast<int>(offers.size()); ++peer)
    if (peer != self)
      requireSameCall(self, offers[static_cast<size_t>(self)].call, peer,
                      offers[static_cast<size_t>(peer)].call);
}

std::vector<Offer> exchangeOffers(OpContext& ctx, const Offer& mine) {
  const int r = ctx.group.rank;
  const size_t n = static_cast<size_t>(ctx.group.size);
  const OfferBytes mineBytes = encodeOffer(mine);
  std::vector<OfferBytes> theirs(n);
  std::vector<P2PTransfer> exchange;
  for (int peer = 0; peer < ctx.group.size; ++peer) {
    if (peer == r) continue;
    exchange.push_back({true, peer, mineBytes.data(), nullptr, kOfferBytes});
    exchange.push_back(
        {false, peer, nullptr, theirs[static_cast<size_t>(peer)].data(), kOfferBytes});
  }
  OpContext signatures = ctx;
  signatures.carries = Carries::kSignatures;
  return orderedRound([&] {
    runTransfers(signatures, exchange);
    std::vector<Offer> offers(n);
    for (int peer = 0; peer < ctx.group.size; ++peer)
      offers[static_cast<size_t>(peer)] =
          peer == r ? mine : decodeOffer(theirs[static_cast<size_t>(peer)], peer);
    return offers;
  });
}

bool everyRank(OpContext& ctx, bool mine) {
  uint8_t flag = mine ? 1 : 0;
  // The operation's own size, not the vote's one byte: the vote's errors name the operation.
  OpContext vote = ctx;
  vote.dtype = kernels::DataType::kUint8;
  vote.op = kernels::RedOp::kMin;
  vote.carries = Carries::kData;
  return orderedRound([&] {
    allreduceOneShot(vote, {&flag, &flag, 1, 0});
    return flag == 1;
  });
}

}  // namespace tutti::runtime
