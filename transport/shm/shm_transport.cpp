// The shm transport: every rank creates one POSIX shared-memory segment holding its INCOMING
// FIFOs, one per possible sender, indexed by the sender's rank (fifo.hpp has the FIFO format).
// A sender maps its FIFO inside the receiver's segment and writes the data there; the receiver
// reads it in place, so a message is copied once, by the sender.
//
// Memory: the segment is created sparse with room for nranks FIFOs, but connect() backs only the
// FIFOs of the peers it is given with memory (posix_fallocate), so a ring over 8 ranks costs 2
// FIFOs per rank, not 7, and a full /dev/shm is an Error from connect() naming /dev/shm and the
// size, never a SIGBUS later. Senders write only into FIFOs that their receiver has allocated:
// connect() is collective among the peers and data flows only after the barrier that follows it.
//
// Lifetime: connected() unlinks the segment's name and those of the peers' segments it mapped
// (everybody has mapped them by then; a peer killed before its own connected() leaves nothing,
// which matters to survivors that go on: tutti_comm_shrink), so a job that crashes afterwards
// leaks nothing; the destructor unlinks it if connected() never ran. Hence all connect() calls
// must come before connected().
//
// Failure: a dead peer is not noticed here (the runtime's job); nothing in here can crash on what
// a peer writes into the shared memory: sizes and counters read from it are checked. A rank's
// departure note (departure_note.hpp) sits in its segment's header page, which every peer maps
// at connect, so the note outlives the rank's process.
//
// Peer memory: the ranks it joins share a host and a kernel, so it also gives the direct
// collectives their access to the peers' buffers (peer_memory.hpp), which the FIFOs do not use.
//
// Threading: the FIFOs of distinct connections are independent; progress() has nothing to do.
#include <cstdint>
#include <memory>
#include <vector>

#include "base/error.hpp"
#include "base/prefault.hpp"
#include "transport/detail/options.hpp"
#include "transport/peer_memory.hpp"
#include "transport/shm/departure_note.hpp"
#include "transport/shm/fifo.hpp"
#include "transport/shm/segment.hpp"
#include "transport/transport.hpp"

namespace tutti::transport {
namespace shm {
namespace {

// Both directions between this rank and one peer.
struct Link {
  Mapping incoming;  // the peer's FIFO in our segment
  Mapping outgoing;  // our FIFO in the peer's segment
  FifoReceiver receiver;
  FifoSender sender;

  Link(Mapping in, Mapping out, const FifoLayout& layout, int peer)
      : incoming(std::move(in)),
        outgoing(std::move(out)),
        receiver(incoming.data(), layout, fmt::format("rank {}", peer)),
        sender(outgoing.data(), layout, fmt::format("rank {}", peer)) {}
};

class ShmTransport final : public Transport {
 public:
  explicit ShmTransport(const Options& options)
      : options_(checked(options)),
        layout_(FifoLayout::of(options.slots, options.slotBytes)),
        segment_(randomSegmentName(options.secret, options.jobTag, options.rank), segmentBytes(),
                 headerOf(options.rank)),
        ownHeader_(segment_.map(0, SegmentHeader::kBytes)),
        links_(options.nranks),
        peerHeaders_(options.nranks) {}

  const char* name() const override { return "shm"; }
  std::string localAddress() const override { return segment_.name(); }

  void connect(const std::vector<int>& peers, const std::vector<std::string>& addresses,
               const Deadline& /*deadline: nothing here waits*/) override {
    detail::checkPeers(options_, peers, addresses, "shm");
    for (int peer : peers)
      if (links_[peer])
        raise(ErrorCode::kInvalidUsage, "shm: rank {} is already connected to rank {}",
              options_.rank, peer);
    // Our own memory first: when /dev/shm is full, fail before touching any peer's segment.
    for (int peer : peers)
      segment_.allocate(fifoOffset(peer), layout_.bytes,
                        fmt::format("the FIFO from rank {} ({} slots of {} bytes)", peer,
                                    layout_.slots, layout_.slotBytes));
    for (int peer : peers) {
      Mapping in = segment_.map(fifoOffset(peer), layout_.bytes);
      Mapping out =
          mapPeerSegment(addresses[peer], headerOf(peer), fifoOffset(options_.rank), layout_.bytes);
      links_[peer] = std::make_unique<Link>(std::move(in), std::move(out), layout_, peer);
    }
    watch(peers, addresses);
  }

  void watch(const std::vector<int>& peers, const std::vector<std::string>& addresses) override {
    detail::checkPeers(options_, peers, addresses, "shm");
    for (int peer : peers) {
      peerHeaders_[peer] =
          mapPeerSegment(addresses[peer], headerOf(peer), 0, SegmentHeader::kBytes);
      peerNames_.push_back(addresses[peer]);
    }
  }

  void connected() override {
    // Every peer has allocated its FIFOs by now: their pages are mapped here before any message
    // needs them (base/prefault.hpp).
    for (const auto& link : links_)
      if (link) {
        prefault(link->incoming.data(), link->incoming.bytes());
        prefault(link->outgoing.data(), link->outgoing.bytes());
      }
    segment_.unlink();
    for (const std::string& name : peerNames_) unlinkSegmentName(name);
    peerNames_.clear();
  }

  SendConn& send(int peer) override { return link(peer).sender; }
  RecvConn& recv(int peer) override { return link(peer).receiver; }

  void announce(const Departure& departure) override {
    writeDeparture(ownHeader_.data(), departure);
  }
  Departure departureOf(int peer) const override {
    if (peer < 0 || peer >= options_.nranks || !peerHeaders_[peer].data()) return {};
    return readDeparture(peerHeaders_[peer].data());
  }
  PeerMemory* peerMemory() override { return &peerMemory_; }

 private:
  static const Options& checked(const Options& options) {
    detail::checkOptions(options, "shm");
    return options;
  }

  // The header page and nranks FIFOs. Each FIFO is at most 4 TiB (checked options), so only a
  // very large nranks can overflow off_t.
  size_t segmentBytes() const {
    size_t fifos = 0, total = 0;
    if (__builtin_mul_overflow(static_cast<size_t>(options_.nranks), layout_.bytes, &fifos) ||
        __builtin_add_overflow(fifos, SegmentHeader::kBytes, &total) ||
        total > static_cast<size_t>(INT64_MAX))
      raise(ErrorCode::kInvalidArgument,
            "shm: {} ranks x {} slots of {} bytes do not fit in one /dev/shm segment",
            options_.nranks, options_.slots, options_.slotBytes);
    return total;
  }

  SegmentHeader headerOf(int rank) const {
    SegmentHeader header;
    header.rank = rank;
    header.nranks = options_.nranks;
    header.slots = static_cast<uint32_t>(options_.slots);
    header.slotBytes = options_.slotBytes;
    header.fifoBytes = layout_.bytes;
    header.jobHash = hashJobTag(options_.jobTag);
    return header;
  }

  size_t fifoOffset(int sender) const {
    return SegmentHeader::kBytes + static_cast<size_t>(sender) * layout_.bytes;
  }

  Link& link(int peer) {
    if (peer < 0 || peer >= options_.nranks || !links_[peer])
      raise(ErrorCode::kInvalidUsage, "shm: rank {} has no connection to rank {}", options_.rank,
            peer);
    return *links_[peer];
  }

  Options options_;
  FifoLayout layout_;
  OwnSegment segment_;
  Mapping ownHeader_;
  std::vector<std::unique_ptr<Link>> links_;
  std::vector<Mapping> peerHeaders_;    // each connected peer's header page, for its departure note
  std::vector<std::string> peerNames_;  // the peers' segments mapped, until connected()
  PeerMemory peerMemory_;
};

}  // namespace
}  // namespace shm

std::unique_ptr<Transport> makeShmTransport(const Options& options) {
  return std::make_unique<shm::ShmTransport>(options);
}

}  // namespace tutti::transport
