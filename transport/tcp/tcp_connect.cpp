#include "transport/tcp/tcp_connect.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>

#include "base/drop_log.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "transport/tcp/hello.hpp"

namespace tutti::transport::tcp {
namespace {

// An acceptor gives one connection at most this long to finish its handshake.
constexpr std::chrono::milliseconds kHandshakeLimit{5000};
// Connections that have not sent a full hello yet; past this many the oldest is dropped.
constexpr size_t kMaxPending = 64;

// How often a wait for peers asks whether one of them is gone.
constexpr std::chrono::milliseconds kCheckEvery{200};

// The next moment to check on the peers, or the deadline if it comes first.
Deadline checkpoint(const Deadline& deadline) {
  return deadline.remainingMs() < kCheckEvery.count() ? deadline : Deadline::after(kCheckEvery);
}

// A peer gone, as the runtime's check says: passed on as it is, not as a failure to connect.
struct PeerGone : Error {
  explicit PeerGone(const Error& e) : Error(e) {}
};

void checkPeers(const ConnectPlan& plan) {
  if (!plan.checkPeers) return;
  try {
    plan.checkPeers();
  } catch (const Error& e) {
    throw PeerGone(e);
  }
}

Deadline shorter(const Deadline& deadline) {
  return deadline.remainingMs() < kHandshakeLimit.count() ? deadline
                                                          : Deadline::after(kHandshakeLimit);
}

std::string peerName(const ConnectPlan& plan, int peer) {
  return fmt::format("rank {} ({})", peer, plan.addresses[peer]);
}

// The peers that still lack a socket, e.g. "2 (10.0.0.2:4000), 3 (10.0.0.3:4000)".
std::string missingPeers(const ConnectPlan& plan, const std::map<int, std::vector<Fd>>& have) {
  std::string out;
  for (int peer : plan.peers) {
    auto it = have.find(peer);
    const auto got = it == have.end() ? 0
                                      : std::count_if(it->second.begin(), it->second.end(),
                                                      [](const Fd& fd) { return fd.valid(); });
    if (got == plan.socketsPerPeer) continue;
    if (!out.empty()) out += ", ";
    out += fmt::format("{} ({})", peer, plan.addresses[peer]);
  }
  return out;
}

[[noreturn]] void raiseTimeout(const ConnectPlan& plan, const std::map<int, std::vector<Fd>>& have,
                               const std::string& detail) {
  raise(ErrorCode::kTimeout, "tcp: rank {} timed out connecting; peers still missing: {}{}",
        plan.rank, missingPeers(plan, have), detail);
}

// Dials `peer` for socket `index`: connect, hello, handshake (as client), check the reply.
Fd dial(const ConnectPlan& plan, int peer, int index, const Deadline& deadline) {
  const std::string what = peerName(plan, peer);
  const SockAddr address = parseAddress(plan.addresses[peer], peer);
  Fd fd;
  while (!fd.valid()) {
    checkPeers(plan);
    try {
      fd = connectTo(address, checkpoint(deadline));
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kTimeout || deadline.expired()) throw;
    }
  }
  const std::string hello =
      encodeHello({plan.rank, peer, static_cast<uint32_t>(index), plan.jobTag});
  writeAll(fd.get(), hello.data(), hello.size(), deadline, what);
  authenticateAsClient(fd.get(), plan.secret, deadline, what);
  std::string reply(helloBytes(plan.jobTag), '\0');
  readAll(fd.get(), reply.data(), reply.size(), deadline, what);
  const Hello got = decodeHello(reply, plan.jobTag);
  if (got.from != peer || got.to != plan.rank || got.socket != static_cast<uint32_t>(index))
    raise(ErrorCode::kRemote, "{} answered as rank {} to rank {} socket {}", what, got.from, got.to,
          got.socket);
  return fd;
}

// A socket accepted but not yet introduced.
struct Pending {
  Fd fd;
  std::string from;  // "host:port" of the remote end
  std::string hello;
  size_t got = 0;
};

class Acceptor {
 public:
  Acceptor(const ConnectPlan& plan, int listenFd, std::map<int, std::vector<Fd>>& sockets)
      : plan_(plan),
        listenFd_(listenFd),
        sockets_(sockets),
        dropLog_(fmt::format("tcp: rank {}'s data port", plan.rank)) {
    for (int peer : plan.peers)
      if (peer > plan.rank) {
        expected_.push_back(peer);
        sockets_[peer].resize(plan.socketsPerPeer);
        missing_ += plan.socketsPerPeer;
      }
  }

  void run(const Deadline& deadline) {
    while (missing_ > 0) {
      if (deadline.expired()) raiseTimeout(plan_, sockets_, "");
      checkPeers(plan_);
      std::vector<pollfd> fds{{listenFd_, POLLIN, 0}};
      for (const Pending& p : pending_) fds.push_back({p.fd.get(), POLLIN, 0});
      const int rc = poll(fds.data(), fds.size(), checkpoint(deadline).remainingMs());
      if (rc < 0 && errno != EINTR) throwSystemError("tcp: poll", errno);
      if (rc <= 0) continue;
      // Pending sockets first (their indices match fds), then new ones.
      for (size_t i = 1; i < fds.size(); ++i)
        if (fds[i].revents) readHello(pending_[i - 1], deadline);
      std::erase_if(pending_, [](const Pending& p) { return !p.fd.valid(); });
      if (fds[0].revents) acceptAll();
    }
  }

 private:
  void acceptAll() {
    for (;;) {
      SockAddr from;
      from.length = sizeof(from.storage);
      const int fd = accept4(listenFd_, reinterpret_cast<sockaddr*>(&from.storage), &from.length,
                             SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        throwSystemError("tcp: accept", errno);
      }
      if (pending_.size() >= kMaxPending) {
        dropLog_.dropped(
            fmt::format("{}: {} connections sent no hello", pending_.front().from, kMaxPending));
        pending_.erase(pending_.begin());
      }
      Pending p{Fd(fd), from.toString(), std::string(helloBytes(plan_.jobTag), '\0')};
      pending_.push_back(std::move(p));
    }
  }

  void drop(Pending& p, const std::string& why) {
    dropLog_.dropped(fmt::format("{}: {}", p.from, why));
    p.fd.reset();
  }

  void readHello(Pending& p, const Deadline& deadline) {
    const ssize_t n = recv(p.fd.get(), p.hello.data() + p.got, p.hello.size() - p.got, 0);
    if (n == 0) {
      log::info("tcp: rank {}: {} closed its connection before its hello", plan_.rank, p.from);
      p.fd.reset();
      return;
    }
    if (n < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        drop(p, fmt::format("recv: {}", std::strerror(errno)));
      return;
    }
    p.got += static_cast<size_t>(n);
    if (p.got == p.hello.size()) introduce(p, deadline);
  }

  // A complete hello has arrived: check it, run the handshake, answer, keep the socket.
  void introduce(Pending& p, const Deadline& deadline) {
    Hello hello;
    try {
      hello = decodeHello(p.hello, plan_.jobTag);
    } catch (const Error& e) {
      return drop(p, e.what());
    }
    const bool expected =
        std::find(expected_.begin(), expected_.end(), hello.from) != expected_.end();
    if (hello.to != plan_.rank || !expected ||
        hello.socket >= static_cast<uint32_t>(plan_.socketsPerPeer))
      return drop(p, fmt::format("unexpected hello from rank {} to rank {} socket {}", hello.from,
                                 hello.to, hello.socket));
    Fd& slot = sockets_[hello.from][hello.socket];
    if (slot.valid())
      return drop(p,
                  fmt::format("rank {} socket {} is already connected", hello.from, hello.socket));
    const std::string what = fmt::format("{} claiming to be rank {}", p.from, hello.from);
    try {
      const Deadline limit = shorter(deadline);
      authenticateAsServer(p.fd.get(), plan_.secret, limit, what);
      const std::string reply = encodeHello({plan_.rank, hello.from, hello.socket, plan_.jobTag});
      writeAll(p.fd.get(), reply.data(), reply.size(), limit, what);
    } catch (const Error& e) {
      return drop(p, e.what());
    }
    slot = std::move(p.fd);
    --missing_;
  }

  const ConnectPlan& plan_;
  int listenFd_;
  std::map<int, std::vector<Fd>>& sockets_;
  std::vector<int> expected_;
  std::vector<Pending> pending_;
  int missing_ = 0;
  // Strangers knocking all the time must not bury the one line that matters.
  DropLog dropLog_;
};

}  // namespace

SockAddr parseAddress(const std::string& address, int rank) {
  std::string host;
  std::string port;
  if (!address.empty() && address[0] == '[') {
    const size_t close = address.find("]:");
    if (close != std::string::npos) {
      host = address.substr(1, close - 1);
      port = address.substr(close + 2);
    }
  } else if (const size_t colon = address.rfind(':'); colon != std::string::npos) {
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
  }
  int value = -1;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (host.empty() || port.empty() || ec != std::errc() || end != port.data() + port.size() ||
      value < 1 || value > 65535)
    raise(ErrorCode::kInvalidArgument, "tcp: rank {}'s address '{}' is not host:port", rank,
          address);
  return SockAddr::resolve(host, value);
}

Listener listenForPeers(const std::string& bindHost, int backlog) {
  Listener listener;
  listener.fd = listenOn(SockAddr::resolve(bindHost.empty() ? "0.0.0.0" : bindHost, 0), backlog);
  setNonBlocking(listener.fd.get());
  const SockAddr bound = SockAddr::ofFd(listener.fd.get());
  std::string host = bound.host();
  if (host == "0.0.0.0") host = "127.0.0.1";
  if (host == "::") host = "::1";
  listener.address = bound.family() == AF_INET6 ? fmt::format("[{}]:{}", host, bound.port())
                                                : fmt::format("{}:{}", host, bound.port());
  return listener;
}

std::map<int, std::vector<Fd>> openSockets(const ConnectPlan& plan, int listenFd,
                                           const Deadline& deadline) {
  std::map<int, std::vector<Fd>> sockets;
  std::vector<int> lower;
  for (int peer : plan.peers)
    if (peer < plan.rank) lower.push_back(peer);
  std::sort(lower.begin(), lower.end());
  for (int peer : lower) {
    for (int index = 0; index < plan.socketsPerPeer; ++index) {
      try {
        sockets[peer].push_back(dial(plan, peer, index, deadline));
      } catch (const PeerGone&) {
        throw;
      } catch (const Error& e) {
        if (e.code() == ErrorCode::kTimeout)
          raiseTimeout(plan, sockets, fmt::format(" (while dialling rank {}: {})", peer, e.what()));
        raise(e.code(), "tcp: rank {} cannot connect to {}: {}{}", plan.rank, peerName(plan, peer),
              e.what(),
              e.code() == ErrorCode::kRemote ? " (do both use the same job tag and secret?)" : "");
      }
    }
  }
  Acceptor(plan, listenFd, sockets).run(deadline);
  return sockets;
}

}  // namespace tutti::transport::tcp
