#include "runtime/collectives/direct.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "kernels/kernels.hpp"
#include "runtime/collectives/p2p.hpp"
#include "runtime/memory/cross_memory.hpp"
#include "runtime/memory/registered_memory.hpp"

namespace tutti::runtime {
namespace {

// Peers' data copied through the kernel is reduced in pieces this large, each peer's piece
// staying in cache between the copy and the reduction.
constexpr size_t kStagedBytes = 128 << 10;

// One of an offer's two buffers.
struct OfferedBuffer {
  uint64_t address = 0;
  uint8_t registered = 0;
  RegisteredRange range;
};

// Plain bytes (no bool): it comes from another process.
struct Offer {
  char collective[16] = {};  // its name, so that an allgather never meets a reduce-scatter
  uint64_t bytes = 0;
  uint8_t dtype = 0, op = 0;
  uint8_t anyBuffers = 0;  // TUTTI_DIRECT_BUFFERS=any: its ordinary memory may be reached too
  uint64_t timeoutMs = 0;  // its communicator's, when it made the offer
  ProcessIdentity process;
  OfferedBuffer send, recv;
};

OfferedBuffer offeredBuffer(const void* data, size_t bytes) {
  OfferedBuffer offered;
  offered.address = reinterpret_cast<uint64_t>(data);
  if (const auto range = findRegistered(data, bytes)) {
    offered.registered = 1;
    offered.range = *range;
  }
  return offered;
}

Offer offerOf(const OpContext& ctx, bool wantsRecv, const void* send, size_t sendBytes,
              const void* recv, size_t recvBytes) {
  Offer offer;
  std::strncpy(offer.collective, ctx.collective, sizeof offer.collective - 1);
  offer.bytes = ctx.bytes;
  offer.dtype = static_cast<uint8_t>(ctx.dtype);
  offer.op = static_cast<uint8_t>(ctx.op);
  offer.timeoutMs = static_cast<uint64_t>(ctx.comm.timeout().count());
  if (ctx.comm.localSize() != ctx.comm.size()) return offer;  // nothing reachable
  offer.anyBuffers = ctx.comm.settings().directBuffers == "any" ? 1 : 0;
  offer.process = thisProcess();
  offer.send = offeredBuffer(send, sendBytes);
  if (wantsRecv) offer.recv = offeredBuffer(recv, recvBytes);
  return offer;
}

enum class Reach { kAddress, kMapping, kKernel, kNone };

// How the rank that offered `reader` reaches `owner`'s buffer: every rank works it out alike for
// every pair, from the same offers, so that all agree on the rounds that follow.
Reach reachOf(const Offer& reader, const Offer& owner, const OfferedBuffer& buffer) {
  const bool sameProcess = reader.process.nonce == owner.process.nonce &&
                           reader.process.address == owner.process.address;
  if (buffer.registered == 1) return sameProcess ? Reach::kAddress : Reach::kMapping;
  if (reader.anyBuffers != 1 || owner.anyBuffers != 1) return Reach::kNone;
  return sameProcess ? Reach::kAddress : Reach::kKernel;
}

// "allreduce with 800000 bytes of float32 (sum)"; allgather has no operation to name.
std::string describeCall(const char* collective, uint64_t bytes, uint8_t dtype, uint8_t op) {
  std::string call = fmt::format("{} with {} bytes of {}", collective, bytes,
                                 kernels::typeName(static_cast<kernels::DataType>(dtype)));
  if (std::strcmp(collective, collectiveName(Collective::kAllGather)) != 0)
    call += fmt::format(" ({})", kernels::opName(static_cast<kernels::RedOp>(op)));
  return call;
}

void checkSameCall(const OpContext& ctx, const std::vector<Offer>& offers) {
  const Offer& mine = offers[static_cast<size_t>(ctx.comm.rank())];
  for (size_t peer = 0; peer < offers.size(); ++peer) {
    Offer theirs = offers[peer];
    theirs.collective[sizeof theirs.collective - 1] = '\0';  // whatever the peer sent
    if (std::strcmp(theirs.collective, mine.collective) == 0 && theirs.bytes == mine.bytes &&
        theirs.dtype == mine.dtype && theirs.op == mine.op)
      continue;
    raise(ErrorCode::kInvalidUsage,
          "{}: rank {} calls {} where this rank calls {}: the ranks called different "
          "collectives, counts or types",
          ctx.where(), peer, describeCall(theirs.collective, theirs.bytes, theirs.dtype, theirs.op),
          describeCall(mine.collective, mine.bytes, mine.dtype, mine.op));
  }
}

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

// Every rank's offer, in rank order.
std::vector<Offer> exchangeOffers(OpContext& ctx, const Offer& mine) {
  const int r = ctx.comm.rank();
  std::vector<Offer> offers(static_cast<size_t>(ctx.comm.size()));
  offers[static_cast<size_t>(r)] = mine;
  std::vector<P2PTransfer> exchange;
  for (int peer = 0; peer < ctx.comm.size(); ++peer) {
    if (peer == r) continue;
    exchange.push_back({true, peer, &mine, nullptr, sizeof mine});
    exchange.push_back({false, peer, nullptr, &offers[static_cast<size_t>(peer)], sizeof mine});
  }
  return orderedRound([&] {
    runTransfers(ctx, exchange);
    return offers;
  });
}

// True on every rank when `mine` is true on every rank; also a barrier.
bool everyRank(OpContext& ctx, bool mine) {
  uint8_t flag = mine ? 1 : 0;
  OpContext vote{ctx.comm,
                 ctx.collective,
                 ctx.algorithm,
                 ctx.sequence,
                 1,
                 kernels::DataType::kUint8,
                 kernels::RedOp::kMin};
  return orderedRound([&] {
    allreduceOneShot(vote, {&flag, &flag, 1, 0});
    return flag == 1;
  });
}

}  // namespace

std::optional<DirectPeers> reachPeers(OpContext& ctx, PeerAccess access, const void* send,
                                      size_t sendBytes, void* recv, size_t recvBytes) {
  const int n = ctx.comm.size(), r = ctx.comm.rank();
  const bool wantsRecv = access == PeerAccess::kSendAndRecv;
  const auto offered = std::chrono::steady_clock::now();
  const auto offers =
      exchangeOffers(ctx, offerOf(ctx, wantsRecv, send, sendBytes, recv, recvBytes));
  checkSameCall(ctx, offers);
  auto buffersOf = [&](const Offer& offer) {
    std::vector<const OfferedBuffer*> buffers{&offer.send};
    if (wantsRecv) buffers.push_back(&offer.recv);
    return buffers;
  };
  bool anyKernel = false, anyMapping = false;
  for (const Offer& reader : offers)
    for (const Offer& owner : offers) {
      if (&reader == &owner) continue;
      for (const OfferedBuffer* buffer : buffersOf(owner)) {
        const Reach reach = reachOf(reader, owner, *buffer);
        if (reach == Reach::kNone) return std::nullopt;
        anyKernel |= reach == Reach::kKernel;
        anyMapping |= reach == Reach::kMapping;
      }
    }
  PeerBuffers& reached = ctx.comm.peerBuffers();
  if (anyKernel && !reached.crossMemory) {
    bool works = true;
    for (int peer = 0; works && peer < n; ++peer)
      if (peer != r && offers[static_cast<size_t>(peer)].process.nonce != thisProcess().nonce)
        works =
            crossMemoryReaches(ctx.comm.peer(peer).pid, offers[static_cast<size_t>(peer)].process);
    reached.crossMemory = everyRank(ctx, works);
  }
  if (anyKernel && !*reached.crossMemory) return std::nullopt;

  DirectPeers peers;
  peers.someInPlace = wantsRecv && std::ranges::any_of(offers, [](const Offer& offer) {
                        return offer.send.address == offer.recv.address;
                      });
  for (int peer = 0; peer < n; ++peer)
    if (offers[static_cast<size_t>(peer)].timeoutMs <
        offers[static_cast<size_t>(peers.shortestTimeoutRank)].timeoutMs)
      peers.shortestTimeoutRank = peer;
  peers.offered = offered;
  peers.trustedUntil =
      offered +
      std::chrono::milliseconds(offers[static_cast<size_t>(peers.shortestTimeoutRank)].timeoutMs);
  bool mapped = true;
  auto reach = [&](int peer, const OfferedBuffer& buffer, size_t bytes) {
    PeerBuffer reachable{peer, nullptr, buffer.address, ctx.comm.peer(peer).pid};
    switch (reachOf(offers[static_cast<size_t>(r)], offers[static_cast<size_t>(peer)], buffer)) {
      case Reach::kAddress: reachable.local = reinterpret_cast<std::byte*>(buffer.address); break;
      case Reach::kMapping:
        reachable.local = reached.map(peer, reachable.pid, buffer.range, bytes);
        mapped = mapped && reachable.local;
        break;
      case Reach::kKernel:
      case Reach::kNone: break;
    }
    return reachable;
  };
  for (int peer = 0; peer < n; ++peer) {
    const Offer& offer = offers[static_cast<size_t>(peer)];
    peers.send.push_back(peer == r ? PeerBuffer{r, static_cast<std::byte*>(const_cast<void*>(send))}
                                   : reach(peer, offer.send, sendBytes));
    if (wantsRecv)
      peers.recv.push_back(peer == r ? PeerBuffer{r, static_cast<std::byte*>(recv)}
                                     : reach(peer, offer.recv, recvBytes));
  }
  if (anyMapping && !everyRank(ctx, mapped)) return std::nullopt;
  return peers;
}

void runInstead(OpContext& ctx, Collective collective, const CollectiveArgs& args) {
  const Algorithm& instead = pickAlgorithm(collective, ctx.bytes, ctx.comm, "direct");
  ctx.algorithm = instead.name;
  ctx.comm.recorder().started(ctx.sequence, instead.name);
  instead.run(ctx, args);
}

void copyFromPeer(OpContext& ctx, const PeerBuffer& from, size_t offset, void* to, size_t bytes) {
  if (from.local) {
    if (from.local + offset != to) kernels::copy(&to, 1, from.local + offset, bytes);
    return;
  }
  // After the ranks agreed that the kernel copies: the peer is gone (ESRCH), or a buffer is not
  // what its owner said (EFAULT).
  const int error = readCrossMemory(from.pid, to, from.remote + offset, bytes);
  if (error == ESRCH)
    raise(ErrorCode::kRemote,
          "{}: rank {} ({}) is gone: its process exited while this rank read "
          "its buffer",
          ctx.where(), from.rank, describe(ctx.comm.peer(from.rank)));
  if (error != 0)
    raise(ErrorCode::kSystem,
          "{}: copying from rank {} ({})'s buffer at {:#x} through the kernel failed: {}",
          ctx.where(), from.rank, describe(ctx.comm.peer(from.rank)), from.remote + offset,
          std::strerror(error));
}

void reduceFromPeers(OpContext& ctx, const DirectPeers& peers, size_t offset,
                     std::span<void* const> outs, size_t count) {
  const bool staged = std::ranges::any_of(peers.send, [](const PeerBuffer& b) { return !b.local; });
  const size_t typeSize = ctx.typeSize(), ranks = peers.send.size();
  const size_t step = staged ? kStagedBytes / typeSize : std::max<size_t>(1, count);
  std::byte* staging = staged ? ctx.comm.peerBuffers().staging(ranks * step * typeSize) : nullptr;
  // avg divides after the sum: once, in the first output, whose bits the others then receive.
  const bool average = ctx.op == kernels::RedOp::kAvg;
  std::vector<const void*> inputs(ranks);
  std::vector<void*> pieces(outs.size());
  for (size_t done = 0; done < count; done += step) {
    const size_t elements = std::min(step, count - done), bytes = elements * typeSize;
    const size_t at = offset + done * typeSize;
    for (size_t rank = 0; rank < ranks; ++rank) {
      const PeerBuffer& input = peers.send[rank];
      if (input.local) {
        inputs[rank] = input.local + at;
        continue;
      }
      std::byte* copy = staging + rank * step * typeSize;
      copyFromPeer(ctx, input, at, copy, bytes);
      inputs[rank] = copy;
    }
    for (size_t i = 0; i < outs.size(); ++i)
      pieces[i] = static_cast<std::byte*>(outs[i]) + done * typeSize;
    kernels::reduce(pieces.data(), average ? 1 : static_cast<int>(pieces.size()), inputs.data(),
                    static_cast<int>(ranks), elements, ctx.dtype, ctx.op);
    if (!average) continue;
    finishAverage(ctx, pieces[0], elements);
    if (pieces.size() > 1)
      kernels::copy(pieces.data() + 1, static_cast<int>(pieces.size() - 1), pieces[0], bytes);
  }
}

void barrier(OpContext& ctx) {
  everyRank(ctx, true);
}

void finish(OpContext& ctx, const DirectPeers& peers) {
  barrier(ctx);
  const auto now = std::chrono::steady_clock::now();
  if (now < peers.trustedUntil) return;
  using std::chrono::duration_cast, std::chrono::milliseconds;
  raise(ErrorCode::kTimeout,
        "{}: this rank finished {} ms after it offered its buffers, past rank {}'s timeout of {} "
        "ms: that rank may have given up on the operation and reused the buffers this rank read, "
        "so the result is not trusted (was this rank stopped, or starved of CPU? a larger "
        "TUTTI_TIMEOUT covers longer operations)",
        ctx.where(), duration_cast<milliseconds>(now - peers.offered).count(),
        peers.shortestTimeoutRank,
        duration_cast<milliseconds>(peers.trustedUntil - peers.offered).count());
}

}  // namespace tutti::runtime
