// The tcp transport: one listening socket per rank, opened at creation; connect() opens
// socketsPerPeer authenticated sockets to every peer (tcp_connect.hpp says how, and why that
// cannot deadlock), and each peer's sockets become one TcpLink (tcp_link.hpp: framing, staging
// slots, striping). connected() closes the listener: nobody accepts on it any more, so strangers'
// connections would otherwise pile up in its backlog for the job's lifetime.
//
// Address: localAddress() is "host:port" of the listening socket (tcp_connect.hpp's Listener:
// a job spanning hosts must pass the interface's address in Options::bindHost).
//
// progress(): (1) writes the queued frames of the links that have some (a list, so an idle
// transport does no work for it), and (2) asks epoll, without waiting, which sockets have new
// data and reads it into free receive slots (edge-triggered: a socket is reported once per
// arrival; data left behind because the slots were full is read by the next tryPeek). So an
// idle progress() costs one epoll_wait system call, and each call does bounded work: at most
// the slots free at that moment, per socket.
//
// Threading: the calls on one Transport — send(p)/recv(p) connections and progress() — must not
// run concurrently (one thread at a time); they share sockets and the pending-write list.
//
// Destruction flushes frames still queued (for up to 5 s while the peer reads) before closing,
// so the last post() of a rank that then leaves is delivered; a failed communicator's transport
// (abandonPendingSends) closes at once.
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <memory>
#include <vector>

#include "base/error.hpp"
#include "base/log.hpp"
#include "base/socket.hpp"
#include "transport/detail/options.hpp"
#include "transport/tcp/tcp_connect.hpp"
#include "transport/tcp/tcp_link.hpp"
#include "transport/transport.hpp"

namespace tutti::transport {
namespace tcp {
namespace {

constexpr int kSocketBufferBytes = 4 << 20;
constexpr std::chrono::milliseconds kCloseFlushLimit{5000};
constexpr int kEventsPerProgress = 64;

void setBuffers(int fd) {
  // Best effort: the kernel caps these at net.core.[rw]mem_max.
  const int bytes = kSocketBufferBytes;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
}

class TcpTransport final : public Transport {
 public:
  explicit TcpTransport(const Options& options) : options_(options) {
    detail::checkOptions(options_, "tcp");
    Listener listener = listenForPeers(
        options_.bindHost, std::max(128, options_.nranks * options_.socketsPerPeer + 64));
    listener_ = std::move(listener.fd);
    address_ = std::move(listener.address);
    setBuffers(listener_.get());  // accepted sockets inherit them
    epoll_ = Fd(epoll_create1(EPOLL_CLOEXEC));
    if (!epoll_.valid()) throwSystemError("tcp: epoll_create1", errno);
    links_.resize(options_.nranks);
  }

  // Flushes the frames still queued on any link, all links at once (a peer may be flushing to
  // us at the same time, so we keep reading, and throwing away, what arrives meanwhile).
  ~TcpTransport() override {
    const Deadline deadline = Deadline::after(kCloseFlushLimit);
    std::vector<pollfd> fds;
    while (!abandoned_) {
      bool queued = false;
      for (auto& link : links_)
        if (link) queued |= link->flushWrites();
      if (!queued || deadline.expired()) break;
      fds.clear();
      for (auto& link : links_)
        if (link) link->addPollFds(fds);
      if (poll(fds.data(), fds.size(), std::min(deadline.remainingMs(), 100)) < 0 && errno != EINTR)
        break;
      for (auto& link : links_)
        if (link) link->discardInput();
    }
    for (auto& link : links_)
      if (link) link->close(abandoned_);
  }

  const char* name() const override { return "tcp"; }
  std::string localAddress() const override { return address_; }

  void connect(const std::vector<int>& peers, const std::vector<std::string>& addresses,
               const Deadline& deadline) override {
    detail::checkPeers(options_, peers, addresses, "tcp");
    for (int peer : peers)
      if (links_[peer])
        raise(ErrorCode::kInvalidUsage, "tcp: rank {} is already connected to rank {}",
              options_.rank, peer);
    ConnectPlan plan{options_.rank, options_.jobTag, options_.secret,    options_.socketsPerPeer,
                     peers,         addresses,       options_.checkPeers};
    auto sockets = openSockets(plan, listener_.get(), deadline);
    options_.checkPeers = nullptr;  // it looks at what the runtime keeps only while connecting
    for (auto& [peer, fds] : sockets) {
      for (Fd& fd : fds) {
        setNoDelay(fd.get());
        setBuffers(fd.get());
      }
      auto link = std::make_unique<TcpLink>(
          options_.rank, fmt::format("rank {} ({})", peer, addresses[peer]), std::move(fds),
          options_.slotBytes, options_.slots, &pending_);
      for (int i = 0; i < link->socketCount(); ++i) {
        epoll_event event{};
        event.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
        event.data.u64 = (static_cast<uint64_t>(peer) << 32) | static_cast<uint32_t>(i);
        if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, link->socketFd(i), &event) != 0)
          throwSystemError("tcp: epoll_ctl", errno);
      }
      links_[peer] = std::move(link);
      ++connectedLinks_;
    }
    log::info("tcp: rank {} connected to {} peers ({} sockets each)", options_.rank, peers.size(),
              options_.socketsPerPeer);
  }

  void connected() override { listener_.reset(); }

  SendConn& send(int peer) override { return link(peer).sender(); }
  RecvConn& recv(int peer) override { return link(peer).receiver(); }

  bool sendsPending() const override { return !pending_.empty(); }
  void copyPendingSends() noexcept override {
    for (auto& link : links_)
      if (link) link->copyFramesInPlace();
  }
  void abandonPendingSends() noexcept override { abandoned_ = true; }
  int wakeFd() const override { return epoll_.get(); }

  void progress() override {
    if (!pending_.empty()) pending_.flush();
    if (connectedLinks_ == 0) return;
    epoll_event events[kEventsPerProgress];
    const int n = epoll_wait(epoll_.get(), events, kEventsPerProgress, 0);
    for (int i = 0; i < n; ++i) {
      const auto peer = static_cast<int>(events[i].data.u64 >> 32);
      const auto index = static_cast<int>(events[i].data.u64 & 0xffffffffu);
      links_[peer]->readSocket(index);
    }
  }

 private:
  TcpLink& link(int peer) {
    if (peer < 0 || peer >= options_.nranks || !links_[peer])
      raise(ErrorCode::kInvalidUsage, "tcp: rank {} has no connection to rank {}", options_.rank,
            peer);
    return *links_[peer];
  }

  Options options_;
  Fd listener_;
  std::string address_;
  Fd epoll_;
  PendingWrites pending_;
  std::vector<std::unique_ptr<TcpLink>> links_;
  int connectedLinks_ = 0;
  bool abandoned_ = false;  // close without flushing (abandonPendingSends)
};

}  // namespace
}  // namespace tcp

std::unique_ptr<Transport> makeTcpTransport(const Options& options) {
  return std::make_unique<tcp::TcpTransport>(options);
}

}  // namespace tutti::transport
