// The transports tutti can use, in one table: each one's name, which pairs of ranks it can join
// (judged from what the ranks publish about themselves) and how to make an instance. A new
// transport is a folder under transport/ and one line in registry.cpp. TUTTI_TRANSPORT selects
// among them (TransportSelection); the runtime asks the selection which one joins each pair.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "transport/transport.hpp"

namespace tutti::transport {

// What a rank publishes that decides which transports reach it.
struct Reach {
  // Host name + boot id + network namespace: equal on ranks that share memory and a kernel.
  std::string hostId;
  int rdmaPorts = 0;  // usable RDMA ports (InfiniBand or RoCE) of the rank's host
};

struct TransportKind {
  const char* name;
  // Whether an instance can connect ranks `a` and `b` (symmetric).
  bool (*reaches)(const Reach& a, const Reach& b);
  // Where `auto` (and a ^ list) picks it, when narrower than where it reaches (symmetric; nullptr:
  // wherever it reaches). A list that names it uses it wherever it reaches.
  bool (*autoReaches)(const Reach& a, const Reach& b) = nullptr;
  std::unique_ptr<Transport> (*make)(const Options& options);
  // Ranks it joins reach each other's memory: its instances give a PeerMemory
  // (Transport::peerMemory(), peer_memory.hpp), with which the direct algorithms read peers in
  // place. Known from the kind so that the planner and Connections can tell before connecting.
  bool sharesMemory = false;
  // Keeps departure notes that outlive their process (Transport::announce): made also to watch
  // same-host peers whose data another transport carries.
  bool keepsNotes = false;
  // Listens on a network interface: Options::bindHost must name one.
  bool listens = false;
};

// Every transport known to this process, in the order `auto` prefers them: those built into the
// library, then any registered.
std::vector<const TransportKind*> transportKinds();
// Adds a transport after the built-in ones (a test's, a plug-in's); before any communicator is
// made. kInvalidUsage for a name already taken.
void registerTransport(const TransportKind& kind);

// TUTTI_TRANSPORT, parsed once: the transports allowed, in the order they are tried for a pair.
//   auto (or unset)  every transport, in the table's order
//   tcp | shm,tcp    only these, in this order, each wherever it reaches
//   ^tcp | ^shm,tcp  every transport but these, as auto picks them
class TransportSelection {
 public:
  // auto.
  TransportSelection();
  // kInvalidArgument naming TUTTI_TRANSPORT and the word at fault (an unknown or repeated name,
  // an empty item, `auto` in a list, a list that leaves nothing).
  static TransportSelection parse(const std::string& text);

  // The first allowed transport that joins `a` and `b`; nullptr when none does.
  const TransportKind* choose(const Reach& a, const Reach& b) const;
  // The value as written ("auto" when unset): the ranks must agree on it.
  const std::string& text() const { return text_; }
  // The allowed names, in order ("shm, tcp"), for messages.
  std::string describe() const;

 private:
  std::string text_;
  std::vector<const TransportKind*> allowed_;
  bool named_ = false;  // a list names the transports: each is used wherever it reaches
};

}  // namespace tutti::transport
