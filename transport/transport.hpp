// transport: connections between two ranks, as FIFOs of fixed-size slots (NCCL's "Simple" idea).
// The sender acquires a free slot, writes up to slotBytes() into it and posts it with a tag; the
// receiver peeks the oldest posted slot, consumes it and releases it. Every call here is
// non-blocking: waiting (with deadlines, backoff and abort) is the runtime's job, which keeps one
// waiting policy for every transport. This is the layer's one API header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/auth.hpp"

namespace tutti::transport {

class PeerMemory;  // peer_memory.hpp

// What the runtime says of a message besides its bytes (which call it belongs to). It travels in
// the header every message already has (the shm slot header, the tcp frame header) and reaches
// the receiver as sent: a transport neither reads nor judges it, except that tryReceiveInto
// writes only a message of the tag asked for.
struct Tag {
  uint64_t words[3] = {};
  bool operator==(const Tag&) const = default;
};

// A message's byte count and tag.
struct Envelope {
  size_t bytes = 0;
  Tag tag;
  bool operator==(const Envelope&) const = default;
};

// What both ends of a connection offer a waiter that has stopped spinning: a sleep that ends as
// soon as the peer moves, where the transport can wake sleepers (shm: a futex per FIFO end).
class Conn {
 public:
  virtual ~Conn() = default;
  virtual size_t slotBytes() const = 0;
  // True when sleep() ends early once the peer moves; false: the caller sleeps by itself.
  virtual bool wakesSleepers() const { return false; }
  // Sleeps at most `ns`, ending early once the peer has posted (RecvConn) or freed (SendConn) a
  // slot since the last tryPeek/tryAcquire that found none. Used only when wakesSleepers().
  virtual void sleep(long /*ns*/) {}
};

class SendConn : public Conn {
 public:
  // A free slot to write into, or nullptr when all are in flight. Throws Error when the
  // connection has failed (e.g. the peer closed it: kRemote naming the peer).
  virtual void* tryAcquire() = 0;
  // Publishes the slot returned by the last tryAcquire with `bytes` (<= slotBytes()) valid.
  virtual void post(size_t bytes, const Tag& tag) = 0;
  // Sends `bytes` (<= slotBytes()) from `data` as the next slot; false when no slot is free. A
  // transport that sendsInPlace() keeps a pointer instead of copying: the data must stay
  // unchanged until the runtime has drained its sends (Transport::sendsPending). `data` may be
  // null for an empty message (an empty vector's data()).
  virtual bool tryPostFrom(const void* data, size_t bytes, const Tag& tag) {
    void* slot = tryAcquire();
    if (!slot) return false;
    if (bytes > 0) std::memcpy(slot, data, bytes);  // memcpy from null is undefined, even of 0
    post(bytes, tag);
    return true;
  }
  // True when tryPostFrom costs no copy (tcp: the socket reads the caller's memory), so that a
  // step with a local result sends it from there rather than writing it twice.
  virtual bool sendsInPlace() const { return false; }
};

class RecvConn : public Conn {
 public:
  // The oldest posted slot, with its byte count and tag in *got, or nullptr when none has
  // arrived. Throws Error when the connection has failed. Its bytes may be only 8-byte aligned
  // (shm carries small payloads inside its slot header).
  virtual const void* tryPeek(Envelope* got) = 0;
  // Frees the slot returned by the last successful tryPeek.
  virtual void release() = 0;
  // Takes the oldest message into `dst` when its envelope is `expected`: true once it has
  // arrived, with *got its envelope (a message of another size or tag stays unconsumed and
  // `dst` untouched, for the caller to report). A transport that receivesInPlace() reads it from
  // the wire straight into `dst`, so between the first call and the one that returns true `dst`
  // belongs to the connection.
  virtual bool tryReceiveInto(void* dst, const Envelope& expected, Envelope* got) {
    const void* slot = tryPeek(got);
    if (!slot) return false;
    if (*got == expected) {
      if (expected.bytes > 0) std::memcpy(dst, slot, expected.bytes);  // dst may be null then
      release();
    }
    return true;
  }
  // True when tryReceiveInto costs no copy (tcp), so that a step whose only input is a peer's
  // message receives it into its destination rather than into a slot first.
  virtual bool receivesInPlace() const { return false; }
  // The caller gives up waiting in tryReceiveInto (it failed): `dst` is the caller's again. A
  // message already partly written there is lost, so the connection fails.
  virtual void abandonReceive() {}
};

// What a rank says of itself when it leaves or gives up, so that its peers can tell an orderly exit
// from a death, and a rank that failed because another did from the cause, even once its process
// is gone. Written once.
struct Departure {
  enum class State : uint32_t {
    kNone = 0,      // said nothing (still running, or died without a word)
    kFinished = 1,  // destroyed its communicator in good order
    kFailed = 2,    // its communicator failed; `message` says why
    kAborted = 3,   // it aborted the communicator
  };
  static constexpr size_t kMaxMessageBytes = 2048;

  State state = State::kNone;
  int32_t code = 0;          // kFailed: the failure's ErrorCode
  uint64_t collectives = 0;  // collectives it had issued by then
  std::string message;       // kFailed: its error, at most kMaxMessageBytes
};

struct Options {
  int rank = 0;
  int nranks = 1;
  std::string jobTag;  // unique per communicator: names shm segments, checked in TCP hellos
  Secret secret;       // proves TCP hellos; begins shm segment names (segmentNamePrefix)
  size_t slotBytes = 128 << 10;
  int slots = 8;
  int socketsPerPeer = 1;
  std::string bindHost;  // tcp: the address of the interface to listen on
  // Usable RDMA ports (InfiniBand or RoCE) on this rank's host, as the rank publishes them (ucx:
  // UCX's rendezvous, its zero-copy RDMA read, is worth its handshake only where there are some).
  int rdmaPorts = 0;
  // Called while connect() waits for its peers; throws to give up (the runtime: a peer's process
  // is gone, which ucx's shared memory would notice only at a keepalive round). May be empty.
  std::function<void()> checkPeers;
};

// One transport instance per communicator connects this rank with a set of peers:
//   1. create (it may start listening or create its memory),
//   2. the runtime allgathers localAddress() of every rank,
//   3. connect(peers, addresses) opens connections to the given peers (collective among them),
//   4. the runtime runs a barrier, then calls connected() (shm unlinks its segment names here:
//      once everybody has mapped them, a crash cannot leak them; tcp closes its listening socket),
//   5. send(peer) / recv(peer) are used by the collectives, progress() in every wait.
class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;
  virtual std::string localAddress() const = 0;
  // addresses[r] is rank r's localAddress(); peers lists the ranks to connect to (not self).
  virtual void connect(const std::vector<int>& peers, const std::vector<std::string>& addresses,
                       const Deadline& deadline) = 0;
  virtual void connected() {}
  // Reads what `peers` announce (announce() below) without connecting to them: for peers on this
  // host whose data another transport carries. Before connected(), like connect().
  virtual void watch(const std::vector<int>& /*peers*/,
                     const std::vector<std::string>& /*addresses*/) {}
  virtual SendConn& send(int peer) = 0;
  virtual RecvConn& recv(int peer) = 0;
  // Moves pending data (tcp: finishes partial writes, reads into free slots); never blocks.
  virtual void progress() {}
  // True while posted data still waits in this process for its socket (tcp). The runtime drains
  // it before an operation completes: a rank that returns and computes for minutes must not hold
  // back data its peers are waiting for.
  virtual bool sendsPending() const { return false; }
  // Copies what queued sends still read from the caller's memory (tryPostFrom where
  // sendsInPlace) into the transport's own, so that the caller may free it: for an operation
  // that fails before its sends drained. What is copied is still sent, in order.
  virtual void copyPendingSends() noexcept {}
  // Closing will not deliver what is still queued: the communicator failed, so no peer waits for
  // it, and a peer that no longer reads would hold the close for its whole limit (tcp and ucx:
  // 5 s) otherwise. Called once, just before the transport is destroyed.
  virtual void abandonPendingSends() noexcept {}
  // A descriptor that becomes readable when data arrives (tcp: its epoll set), so that a waiter
  // past its spinning phase can sleep until then instead of for a fixed time; -1 when none.
  virtual int wakeFd() const { return -1; }
  // Readies wakeFd() for one sleep, right before it (ucx: arms the worker, which signals only
  // once per arming); false when something already waits, so that the waiter progresses instead.
  virtual bool armWake() { return true; }
  // Publishes this rank's departure where the peers on this transport read it even after this
  // process is gone (shm: the header page of its segment, which every peer maps). The first call
  // wins; never blocks; any thread. Transports without such a place ignore it.
  virtual void announce(const Departure& /*departure*/) {}
  // What `peer` announced through this transport (State::kNone when nothing, or when the
  // transport carries no announcements). Cheap: waiters poll it.
  virtual Departure departureOf(int /*peer*/) const { return {}; }
  // Access to the memory of the peers it connects (peer_memory.hpp), for a transport whose
  // registry kind sharesMemory; nullptr for the others.
  virtual PeerMemory* peerMemory() { return nullptr; }
};

std::unique_ptr<Transport> makeShmTransport(const Options& options);
std::unique_ptr<Transport> makeTcpTransport(const Options& options);
// UCP over whatever UCX offers (UCX_TLS); kInvalidUsage in a build without UCX.
std::unique_ptr<Transport> makeUcxTransport(const Options& options);
// Whether this build has UCX (libucx-dev was found).
bool ucxBuilt();

}  // namespace tutti::transport
