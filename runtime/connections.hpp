// Every connection of one rank of a communicator, whatever transport carries it: each peer is
// joined by the first transport of TUTTI_TRANSPORT's selection that reaches it (the registry,
// transport/registry.hpp), and the waits see one view across them — a connection per peer, one
// progress call, one "sends pending" and one wake-up descriptor.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/socket.hpp"
#include "transport/peer_memory.hpp"
#include "transport/registry.hpp"
#include "transport/transport.hpp"

namespace tutti::runtime {

class Connections {
 public:
  struct Plan {
    int rank = 0;
    std::vector<transport::Reach> reach;  // per rank of the communicator
    transport::TransportSelection selection;
    transport::Options options;  // rank, nranks, job tag, secret, FIFO geometry
    // The address a listening transport binds to (asked only when one is made).
    std::function<std::string()> bindHost;
    // Gives every rank's string for this rank's (a collective exchange through the store).
    std::function<std::vector<std::string>(const std::string& mine)> exchange;
    // "rank 3 (host:pid)", for messages.
    std::function<std::string(int rank)> describe;
  };

  // Makes the transports this rank needs, exchanges their addresses and connects every peer
  // (collective over the communicator). kInvalidUsage when no allowed transport reaches a peer.
  Connections(Plan plan, const Deadline& deadline);
  ~Connections();
  Connections(const Connections&) = delete;
  Connections& operator=(const Connections&) = delete;

  // Every rank has connected (after a barrier): the transports may drop what only connecting
  // needed (shm segment names, tcp listeners).
  void connected();

  transport::SendConn& sendTo(int peer) { return *send_[static_cast<size_t>(peer)]; }
  transport::RecvConn& recvFrom(int peer) { return *recv_[static_cast<size_t>(peer)]; }
  // The transport's name for a peer ("self" for this rank).
  const char* transportTo(int peer) const;
  // Every peer is joined by a transport whose ranks map each other's memory.
  bool allShareMemory() const { return allShareMemory_; }
  // Access to every peer's memory (transport/peer_memory.hpp): that of the one transport that
  // carries them all when it shares memory; nullptr when none does, or there are no peers.
  transport::PeerMemory* peerMemory() const { return peerMemory_; }
  // Per rank, the transport that keeps its departure notes (nullptr: only the store has them).
  std::vector<transport::Transport*> noteCarriers() const;

  // Moves data on every transport; called in every wait round. Never blocks.
  void progress();
  // Some transport still holds posted data in this process.
  bool sendsPending() const;
  // Every transport copies what its queued sends still read from the caller's memory
  // (Transport::copyPendingSends).
  void copyPendingSends() noexcept;
  // Every transport closes without delivering what it still holds (a failed communicator's;
  // Transport::abandonPendingSends).
  void abandonPendingSends() noexcept;
  // Readable when any transport has data for this rank; -1 when none can tell.
  int wakeFd() const { return wakeFd_; }
  // Every transport readies wakeFd() for one sleep (Transport::armWake); false when one already
  // has something waiting: then progress, not sleep.
  bool armWake();

 private:
  struct Instance {
    const transport::TransportKind* kind;
    std::unique_ptr<transport::Transport> transport;
    std::vector<int> peers;     // whose data it carries
    std::vector<int> watching;  // same-host peers whose notes only it keeps
  };
  void combineWakeFds();

  int rank_;
  std::vector<Instance> instances_;  // in the registry's order
  std::vector<transport::SendConn*> send_;
  std::vector<transport::RecvConn*> recv_;
  std::vector<const transport::TransportKind*> kindOf_;  // per peer; nullptr for this rank
  bool allShareMemory_ = true;
  transport::PeerMemory* peerMemory_ = nullptr;
  Fd wakeSet_;  // an epoll set of the transports' descriptors when there are several
  int wakeFd_ = -1;
};

}  // namespace tutti::runtime
