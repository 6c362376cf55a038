// The data path between this rank and one peer over tcp: socketsPerPeer non-blocking sockets
// carrying frames [u32 length][Tag: 3 x u64][payload], integers little-endian, in both directions.
//
// Sending: `slots` local staging slots (slot_pool.hpp: the one freed last is taken next).
// tryAcquire hands out a free one, post() queues
// its frame and writes what the socket takes at once; the rest goes out in later post(),
// tryAcquire() and flushWrites() calls. A slot is free again only when its frame is entirely in
// the kernel. Frame k (counting from 0) travels over socket k % nsockets, so each socket carries
// an ordered subsequence and the receiver can put the stream back together.
// Receiving: `slots` local slots; frame k lands in a free slot once frame k - slots has been
// released, read from socket k % nsockets. Each receive also asks for up to a page more (into the
// socket's inbox), so a small frame -- header and payload -- arrives in one system call, and
// one that returns less than asked ends the reading there (the socket is empty: no recv that
// only says EAGAIN); bytes the inbox took are copied where they belong, the rest of a large
// payload is read in place. tryPeek returns frame k only
// when it is complete and all earlier ones were released. tryReceiveInto names where the next
// frame (k = consumed_) should go instead: its payload is read straight into the caller's
// memory when its size and tag match and none of it is in the slot yet, saving the copy out of the
// slot.
//
// Errors never escape from flushWrites()/readSocket() (progress() must not fail because of a
// connection nobody is using right now): they are stored and thrown by the next tryAcquire
// (write errors) or by tryPeek when it needs a frame from the failed socket (EOF, reset, a frame
// above slotBytes). Frames that arrived before an EOF are still delivered.
#pragma once

#include <poll.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "base/socket.hpp"
#include "transport/tcp/slot_pool.hpp"
#include "transport/transport.hpp"

namespace tutti::transport::tcp {

class TcpLink;

// [u32 length][3 x u64 tag], little-endian (base/byte_codec.hpp).
inline constexpr size_t kFrameHeaderBytes = 4 + 8 * std::size(Tag{}.words);

// Links with frames waiting for their socket; progress() flushes only these.
class PendingWrites {
 public:
  void add(TcpLink* link);
  void flush();  // keeps the links that still have frames queued
  bool empty() const { return links_.empty(); }

 private:
  std::vector<TcpLink*> links_;
};

class TcpLink {
 public:
  // `what` names the peer in messages: "rank 3 (10.0.0.3:4000)".
  TcpLink(int rank, std::string what, std::vector<Fd> sockets, size_t slotBytes, int slots,
          PendingWrites* pending);
  TcpLink(const TcpLink&) = delete;
  TcpLink& operator=(const TcpLink&) = delete;

  SendConn& sender() { return sender_; }
  RecvConn& receiver() { return receiver_; }
  int socketCount() const { return static_cast<int>(sockets_.size()); }
  int socketFd(int index) const { return sockets_[index].fd.get(); }

  // Writes queued frames as far as the sockets take them; true while some remain queued (and
  // the link has not failed).
  bool flushWrites();
  // Copies each queued frame that reads the caller's memory into its staging slot.
  void copyFramesInPlace() noexcept;
  // Reads what socket `index` holds into free receive slots.
  void readSocket(int index);

  // For closing (TcpTransport's destructor flushes every link at once with these):
  // what to wait for on each socket (POLLOUT where frames are queued, always POLLIN),
  void addPollFds(std::vector<pollfd>& fds) const;
  // reads and throws away what has arrived (nobody will read it, and a peer that is flushing to
  // us must not stall on us), and
  void discardInput();
  // ends our direction of every socket and closes them, warning about frames left unsent unless
  // they were `abandoned` (a failed communicator's: nobody waits for them).
  void close(bool abandoned);

 private:
  struct Socket {
    Fd fd;
    uint64_t nextWrite = 0;  // the next frame this socket sends; frames step by socket count
    size_t written = 0;      // bytes of that frame (header included) already sent
    uint64_t nextRead = 0;   // the next frame this socket receives
    uint8_t header[kFrameHeaderBytes] = {};
    size_t headerGot = 0;
    uint32_t length = 0;
    Tag tag;
    size_t payloadGot = 0;
    std::byte* payloadTo = nullptr;  // where this frame's payload goes, chosen at its first byte
    std::optional<Error> readError;  // EOF, reset or protocol error: no more frames from here
    // Bytes received past the frame being read: [inboxBegin, inboxEnd) are not taken yet.
    std::unique_ptr<std::byte[]> inbox;
    size_t inboxBegin = 0;
    size_t inboxEnd = 0;
  };

  class Sender final : public SendConn {
   public:
    explicit Sender(TcpLink& link) : link_(link) {}
    size_t slotBytes() const override { return link_.slotBytes_; }
    void* tryAcquire() override;
    void post(size_t bytes, const Tag& tag) override;
    bool tryPostFrom(const void* data, size_t bytes, const Tag& tag) override;
    bool sendsInPlace() const override { return true; }

   private:
    TcpLink& link_;
  };

  class Receiver final : public RecvConn {
   public:
    explicit Receiver(TcpLink& link) : link_(link) {}
    size_t slotBytes() const override { return link_.slotBytes_; }
    const void* tryPeek(Envelope* got) override;
    void release() override;
    bool tryReceiveInto(void* dst, const Envelope& expected, Envelope* got) override;
    bool receivesInPlace() const override { return true; }
    void abandonReceive() override;

   private:
    TcpLink& link_;
  };

  bool hasFreeSendSlot();  // throws the stored write error
  // Queues frame posted_ with `bytes` from `data` and starts writing it.
  void enqueue(const std::byte* data, size_t bytes, const Tag& tag);
  bool writeSocket(int index);  // true while frames stay queued on it
  void frameSent(uint64_t frame);
  void advanceWritten(Socket& socket, size_t bytes);
  // Moves the inbox's bytes into the frame being read; true once that frame is whole.
  bool takeFromInbox(Socket& socket);
  // One recv: the rest of the frame's payload (once its header is known) and then the inbox.
  // False when it got nothing (EAGAIN, EOF, error; errors are stored in the socket); *drained
  // when it got less than it asked for.
  bool receive(Socket& socket, bool* drained);
  // The caller's memory when the payload of `socket`'s frame may go there, else its slot.
  std::byte* payloadTarget(const Socket& socket);
  // True when frame consumed_ is complete, after reading its socket; throws that socket's error
  // when it never will be.
  bool nextFrameComplete();
  Error remoteClosed(const char* how) const;

  const int rank_;
  const std::string what_;
  const size_t slotBytes_;
  const uint64_t slots_;
  std::vector<Socket> sockets_;
  PendingWrites* pending_;
  Sender sender_{*this};
  Receiver receiver_{*this};

  // Sending side: frames [freed_, posted_) are queued; sent_[k % slots] marks frame k as fully
  // written (frames complete out of order across sockets).
  SlotPool sendSlots_;
  std::vector<uint32_t> sendLength_;
  std::vector<const std::byte*> sendData_;  // a staging slot, or the caller's memory
  std::vector<std::array<uint8_t, kFrameHeaderBytes>> sendHeader_;
  std::vector<bool> sent_;
  uint64_t posted_ = 0;
  uint64_t freed_ = 0;
  bool acquired_ = false;
  std::optional<Error> writeError_;

  // Receiving side: frame consumed_ is the next tryPeek returns; complete_[k % slots] marks
  // frame k.
  SlotPool recvSlots_;
  std::vector<Envelope> recvEnvelope_;
  std::vector<bool> complete_;
  uint64_t consumed_ = 0;
  bool peeked_ = false;
  // tryReceiveInto's destination for frame consumed_ (null: none) and the envelope it takes
  // there, and whether that frame's payload went there rather than into its slot.
  std::byte* receiveTo_ = nullptr;
  Envelope receiveExpected_;
  bool receivedInPlace_ = false;

  friend class PendingWrites;
  bool listed_ = false;  // in PendingWrites
};

}  // namespace tutti::transport::tcp
