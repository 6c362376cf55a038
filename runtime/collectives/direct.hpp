// What the direct algorithms share: reaching the peers' registered buffers (tutti_mem_alloc) in
// this process, or learning, all ranks together, that they cannot be reached.
//
// The ranks exchange offers (what each calls, where its buffers are). Unless every rank offers
// registered buffers, all of them know it from the same offers and run the algorithm the planner
// would have picked without direct, at the price of that one small round. Otherwise each maps the
// others' buffers (kept for the communicator's life, runtime/memory/peer_buffers.hpp) and a
// one-byte all-reduce votes that every mapping worked before anybody touches peer memory.
// Because the data no longer passes through slots whose sizes would show a mismatch, the offers
// also carry the call: ranks that disagree on it fail, naming both calls.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "runtime/collectives/algorithm.hpp"

namespace tutti::runtime {

// Every rank's buffers, addressable here (this rank's own included), by rank.
struct DirectPeers {
  std::vector<const std::byte*> send;
  std::vector<std::byte*> recv;  // empty unless asked for
};

// Which of the peers' buffers an algorithm touches, and so must be registered on every rank:
// their send buffers, which it reads, and maybe their recv buffers, which it writes.
enum class PeerAccess { kReadSend, kReadSendWriteRecv };

// nullopt on every rank alike when some buffer cannot be reached. recv/recvBytes matter only for
// PeerAccess::kReadSendWriteRecv.
std::optional<DirectPeers> reachPeers(OpContext& ctx, PeerAccess access, const void* send,
                                      size_t sendBytes, void* recv = nullptr, size_t recvBytes = 0);

// The algorithm the planner picks for `collective` without direct, run in its place.
void runInstead(OpContext& ctx, Collective collective, const CollectiveArgs& args);

// Reduces `count` elements at byte `offset` of every rank's send buffer, folding ranks in rank
// order, into each of `outs` (avg finishes in the first, which is then copied to the others): the
// block a rank owns in all-reduce and reduce-scatter.
void reduceFromPeers(OpContext& ctx, const DirectPeers& peers, size_t offset,
                     std::span<void* const> outs, size_t count);

// Returns once every rank has called it: no rank reads a block before its owner finished it,
// and no rank returns (letting its caller reuse the buffer) while a peer may still read it.
void barrier(OpContext& ctx);

}  // namespace tutti::runtime
