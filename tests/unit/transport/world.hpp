// Helpers shared by the transport tests: ranks as threads of this process (each with its own
// Transport), traffic whose every byte is derived from (seed, sender, receiver, index) so the
// receiver checks it independently.
#pragma once

#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "base/deadline.hpp"
#include "base/error.hpp"
#include "tests/warnings.hpp"
#include "transport/transport.hpp"

namespace tutti::transport::test {

enum class Kind { kShm, kTcp, kUcx };
const char* kindName(Kind kind);
std::unique_ptr<Transport> make(Kind kind, const Options& options);

// The Error a call, repeated, throws; fails the test when it throws none before `deadline`.
template <typename Call>
Error errorOf(Call&& call, const Deadline& deadline) {
  try {
    while (!deadline.expired()) call();
  } catch (const Error& e) {
    return e;
  }
  FAIL("no Error before the deadline");
  return Error(ErrorCode::kInternal, "unreachable");
}

// A job tag no other test (or test run) uses.
std::string uniqueTag();
// 4 slots of 4 KiB (small, so that FIFOs fill up), a random secret, a fresh tag.
Options smallOptions(int rank, int nranks, const std::string& tag);
// Every rank except `rank`.
std::vector<int> allBut(int rank, int nranks);
// smallOptions for each of `nranks` ranks of one fresh job.
std::vector<Options> worldOptions(int nranks);

// The messages `from` sends to `to`: sizes in [0, slotBytes] from a seeded std::mt19937 (with 0
// and slotBytes forced now and then), bytes and tags from (seed, from, to, index).
class Traffic {
 public:
  Traffic(uint64_t seed, int from, int to, size_t slotBytes);
  size_t nextSize();
  void fill(std::byte* out, size_t bytes, uint64_t index) const;
  Tag tag(uint64_t index) const;

 private:
  uint64_t key_;
  size_t slotBytes_;
  uint64_t count_ = 0;
  std::mt19937 random_;
};

// One rank's part of a full-mesh exchange: `count` messages to and from each peer, driven by
// non-blocking calls only; odd messages are received with tryReceiveInto, even ones with tryPeek,
// and messages 2-3 of every 4 are sent with tryPostFrom, the others through tryAcquire and post.
// What tryPostFrom sent is overwritten as soon as the transport may no longer read it (at once,
// or once its sends are drained where it sendsInPlace), so a transport that reads it later
// delivers wrong bytes.
// step() does one round (a few sends and receives per peer, then progress()); a wrong size, byte or
// tag or order throws std::runtime_error saying where.
class MeshStream {
 public:
  MeshStream(Transport& transport, int rank, std::vector<int> peers, int count, uint64_t seed);
  bool step();  // false when the round moved nothing
  bool done() const;
  int received(int peer) const;

 private:
  struct Peer {
    int rank;
    Traffic out;
    Traffic in;
    int sent = 0;
    int received = 0;
    std::vector<std::byte> expect;
    std::vector<std::byte> landing;                 // where tryReceiveInto puts every other message
    std::optional<size_t> nextSize = std::nullopt;  // of the next message, once drawn
    std::optional<size_t> nextOutSize = std::nullopt;  // of the next tryPostFrom, once drawn
  };
  void send(Peer& p);
  Transport& transport_;
  int rank_;
  int count_;
  std::vector<Peer> peers_;
  std::vector<std::vector<std::byte>> sentInPlace_;  // until the transport's sends are drained
};

// Runs streams to completion, round robin in this thread; throws on a deadline.
void runStreams(std::vector<MeshStream*> streams, const Deadline& deadline);

// Connects `transports` (rank r at index r) in a full mesh, each connect() on its own thread,
// then calls connected() on all. Rethrows the first error.
void connectAll(const std::vector<std::unique_ptr<Transport>>& transports,
                const Deadline& deadline);

// Destroys every transport of `transports` at once, each on a thread of its own, as ranks that
// leave together do: a ucx transport's destruction waits for its peers' progress (ucx_link.hpp).
void leaveTogether(std::vector<std::unique_ptr<Transport>>& transports);

// Every rank of a thread world streams `count` random-size messages to every other rank while
// receiving (MeshStream), and checks that none fails and nothing was logged.
void streamWorld(Kind kind, std::vector<Options> options, int count, uint64_t seed);

// Checks shared by every transport (stream_test.cpp): misuse of connection calls is kInvalidUsage
// and leaves the connection working; bad Options and peer lists are refused.
void checkConnectionCalls(Kind kind);
void checkBadInputRejected(Kind kind);

// Overwrites what a message was sent from, once the transport has let go of it: a transport that
// reads it later delivers wrong bytes.
void scribble(std::vector<std::byte>& bytes);

// Ranks as threads: each creates its transport from options[rank], the addresses are exchanged
// through a shared vector and a barrier, then connect (full mesh), barrier, connected(), and
// `body`. Returns each rank's outcome: "" or the error it raised.
std::vector<std::string> runThreadWorld(Kind kind, const std::vector<Options>& options,
                                        const std::function<void(int, Transport&)>& body);

using tutti::tests::Warnings;

// How smallOptions' segments of job `tag` are named in /dev/shm: "tutti-<the secret's 12 hex
// digits>-<tag>-", then rank and random digits.
std::string shmPrefix(const std::string& tag);
// Names in /dev/shm that belong to job `tag`.
std::vector<std::string> shmSegmentsOf(const std::string& tag);

}  // namespace tutti::transport::test
