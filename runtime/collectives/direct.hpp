// What the direct algorithms share: reaching the peers' buffers on this host in place, or
// learning, all ranks together, that they cannot be reached.
//
// The ranks exchange offers (direct_rounds.hpp: what each calls, where its buffers are, which
// process it is). Reaching them is the transport's business (transport/peer_memory.hpp, asked
// of Connections): a buffer is reached by its address when its owner is this process (a thread
// world), by mapping it when it is registered memory (tutti_mem_alloc), else by copies through
// the kernel unless a rank set TUTTI_DIRECT_BUFFERS=registered. Whether
// the kernel allows those copies is found out once per communicator, by every rank reading each
// peer's published identity and a vote. Every rank derives from the same offers whether some
// buffer cannot be reached; then all of them run the algorithm the planner would have picked
// without direct, at the price of that one small round. Mappings are voted on before anybody
// touches peer memory. Because the data no longer passes through slots whose sizes would show a
// mismatch, the offers also carry the call: ranks that disagree on it fail, naming both calls.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "runtime/collectives/algorithm.hpp"
#include "transport/peer_memory.hpp"

namespace tutti::runtime {

// One rank's buffer as this rank reaches it.
struct PeerBuffer {
  int rank = 0;
  transport::PeerView memory;
};

// Every rank's buffers (this rank's own included), by rank.
struct DirectPeers {
  std::vector<PeerBuffer> send;
  std::vector<PeerBuffer> recv;  // empty unless asked for
  // Every peer is sure to be in this operation until `shortestTimeout` after `offered`: a peer
  // that times out gives its buffers back to its caller, but not before its timeout has passed
  // since this rank sent its offer (every wait of the peer that could time out after it has passed
  // the offers starts later). What this rank read from a peer's buffer is trusted only if it
  // finishes before.
  std::chrono::steady_clock::time_point offered;
  std::chrono::milliseconds shortestTimeout{0};
  int shortestTimeoutRank = 0;  // whose timeout that is
  bool someInPlace = false;     // some rank's send and recv buffers are one
  // Some rank reaches some other's send (recv) buffer only through the kernel. From the offers,
  // so alike on every rank: what one rank reaches by mapping, another may not.
  bool sendThroughKernel = false, recvThroughKernel = false;
  // Every rank's all-reduce is forced to direct; one forced by tutti_comm_set_algorithm on some
  // ranks only must not make those ranks pull while the others run the ring.
  bool forcedEverywhere = false;
};

// Which of the peers' buffers an algorithm touches, and so must be reachable from every rank:
// their send buffers, which it reads, and maybe their recv buffers too.
enum class PeerAccess { kSend, kSendAndRecv };

// nullopt on every rank alike when some buffer cannot be reached. recv/recvBytes matter only for
// PeerAccess::kSendAndRecv.
std::optional<DirectPeers> reachPeers(OpContext& ctx, PeerAccess access, const void* send,
                                      size_t sendBytes, void* recv = nullptr, size_t recvBytes = 0);

// The algorithm the planner picks for `collective` without direct, run in its place.
void runInstead(OpContext& ctx, Collective collective, const CollectiveArgs& args);

// Copies `bytes` at byte `offset` of `from` to `to` in this process.
void copyFromPeer(OpContext& ctx, const PeerBuffer& from, size_t offset, void* to, size_t bytes);

// Reduces `count` elements at byte `offset` of every rank's send buffer, folding ranks in rank
// order, into each of `outs`, all in this process (avg finishes in the first, which is then
// copied to the others): the block a rank owns in all-reduce and reduce-scatter.
void reduceFromPeers(OpContext& ctx, const DirectPeers& peers, size_t offset,
                     std::span<void* const> outs, size_t count);

// Returns once every rank has called it: no rank reads a block before its owner finished it.
void barrier(OpContext& ctx);

// The last barrier, after which no rank touches another's buffers (so no rank returns, letting
// its caller reuse them, while a peer may still read them); then kTimeout if this rank finished
// too late to trust what it read (peers.shortestTimeout after peers.offered): it was stalled while
// the others gave up.
void finish(OpContext& ctx, const DirectPeers& peers);

}  // namespace tutti::runtime
