// Opening the tcp data sockets of connect(): socketsPerPeer sockets to every peer, each proven
// with the job secret and introduced by a hello (hello.hpp).
//
// Who dials whom: a rank dials every LOWER-ranked peer and accepts every HIGHER-ranked one.
//
// Why this cannot deadlock: the dialling side goes first on the wire: it connects (done by the
// kernel's backlog, which holds nranks * socketsPerPeer connections, whether or not the acceptor
// is accepting yet), sends its hello, then blocks in the secret handshake until the acceptor
// answers. The acceptor multiplexes with poll() and serves a socket only once its complete hello
// has arrived; from then on it blocks (for at most 5 s) on a client that is, by construction,
// sitting in the handshake with it and waiting for nobody else. So an acceptor never waits on a
// rank that waits on somebody, and a dialler waits only on lower ranks. Rank 0 dials nobody and
// goes straight to accepting; by induction on the rank, every rank reaches its accept phase and
// every dial is answered.
//
// Strangers: a connection that sends nothing costs nothing (it is never waited on, only polled,
// and closed when connect() returns); a bad hello, a failed handshake or a duplicate is dropped
// and logged at WARN; the worst a stranger with a well-formed hello can do is hold the acceptor
// for the 5 s of one handshake. None of them aborts connect(), which throws kTimeout naming the
// peers still missing when the deadline passes.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/auth.hpp"
#include "base/deadline.hpp"
#include "base/socket.hpp"

namespace tutti::transport::tcp {

struct ConnectPlan {
  int rank = 0;
  std::string jobTag;
  Secret secret;
  int socketsPerPeer = 1;
  std::vector<int> peers;
  std::vector<std::string> addresses;  // by rank: "host:port"
  // Called while waiting for peers (at least every kCheckEvery); throws to give up: the runtime's
  // "a peer's process is gone". May be empty.
  std::function<void()> checkPeers;
};

// A socket listening for peers' dials, non-blocking, and the "host:port" they dial. bindHost ""
// binds every interface, which is advertised as loopback (127.0.0.1 or ::1): nothing here knows
// which interface a peer can reach, so a job spanning hosts passes the interface's address.
struct Listener {
  Fd fd;
  std::string address;
};
Listener listenForPeers(const std::string& bindHost, int backlog);

// peer -> its sockets, socketsPerPeer of them in socket-index order, non-blocking.
std::map<int, std::vector<Fd>> openSockets(const ConnectPlan& plan, int listenFd,
                                           const Deadline& deadline);

// "host:port" or "[v6host]:port" of `rank`; throws kInvalidArgument.
SockAddr parseAddress(const std::string& address, int rank);

}  // namespace tutti::transport::tcp
