// The store server: one thread accepts, one thread per connection serves it.
//
// A connection must send CLAIM (who it says it is), authenticate (base/auth.hpp) and send HELLO
// within kHandshakeTime of being accepted, or it is dropped and logged at WARN (a few lines per
// burst, then a summary: DropLog): a stranger that sends nothing, garbage, a wrong secret or a huge
// length ties up one thread for at most that long and never the others. At most kMaxHandshakes
// connections may be in their handshake at once and kMaxConnections open in all; past that the
// accept thread stops accepting (the kernel queues newcomers) until one ends. The destructor wakes
// the accept thread through an eventfd and every connection thread with shutdown() on its socket,
// then joins them all.
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <list>
#include <mutex>
#include <system_error>
#include <thread>

#include "base/drop_log.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "runtime/bootstrap/bootstrap.hpp"
#include "runtime/bootstrap/store_state.hpp"
#include "runtime/bootstrap/wire.hpp"

namespace tutti::bootstrap {
namespace {

using namespace std::chrono_literals;
using wire::Type;

constexpr std::chrono::milliseconds kHandshakeTime = 5s;
constexpr std::chrono::milliseconds kFrameTime = 30s;  // to finish a started frame or a reply
constexpr int kMaxHandshakes = 256;
constexpr size_t kMaxConnections = 4096;

class Server final : public StoreServer {
 public:
  Server(const SockAddr& address, const Secret& secret, std::string jobId,
         const StoreLimits& limits);
  ~Server() override;
  SockAddr address() const override { return address_; }
  void waitForClientsToLeave(const Deadline& deadline) override;

 private:
  struct Connection {
    Fd fd;
    std::string peer;  // host:port
    std::string host;
    Claim claim;           // what it said it is, before authenticating
    bool trusted = false;  // one of the job's own (StoreState's Caller)
    std::thread thread;
    std::atomic<bool> done{false};
  };

  void acceptLoop();
  void acceptOneConnection();
  void reapFinished();
  void serve(Connection& connection);
  // False when the connection was dropped (and logged) or closed before saying anything.
  bool handshake(Connection& connection, const std::string& what);
  // CLAIM parsed, then authentication and HELLO; throws why the connection is refused.
  void handshakeAfterClaim(Connection& connection, const wire::Frame& claim,
                           const Deadline& deadline, const std::string& what);
  Caller callerOf(const Connection& connection) const;
  void handle(Connection& connection, const wire::Frame& frame, const std::string& what);

  Secret secret_;
  std::string jobId_;
  Fd listen_;
  Fd wake_;
  SockAddr address_;
  DropLog dropLog_;
  StoreState state_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> handshaking_{0};
  std::mutex connectionsMutex_;
  std::list<std::unique_ptr<Connection>> connections_;
  std::thread acceptThread_;
};

Server::Server(const SockAddr& address, const Secret& secret, std::string jobId,
               const StoreLimits& limits)
    : secret_(secret),
      jobId_(std::move(jobId)),
      listen_(listenOn(address, 1024)),
      address_(SockAddr::ofFd(listen_.get())),
      dropLog_("bootstrap store " + address_.toString()),
      state_(secret.present, secret.present || !jobId_.empty(), limits) {
  setNonBlocking(listen_.get());
  wake_ = Fd(checkSys(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), "eventfd"));
  acceptThread_ = std::thread([this] { acceptLoop(); });
  log::info("bootstrap store listening on {}{}", address_.toString(),
            secret_.present ? " (secret required)" : "");
}

Server::~Server() {
  stopping_ = true;
  state_.stop();
  const uint64_t one = 1;
  if (::write(wake_.get(), &one, sizeof(one)) < 0) {
    // The eventfd cannot be full after one write; the poll timeout would end the loop anyway.
  }
  acceptThread_.join();
  std::list<std::unique_ptr<Connection>> connections;
  {
    std::lock_guard lock(connectionsMutex_);
    connections.swap(connections_);
  }
  for (auto& connection : connections) ::shutdown(connection->fd.get(), SHUT_RDWR);
  for (auto& connection : connections) connection->thread.join();
}

void Server::acceptLoop() {
  while (!stopping_) {
    reapFinished();
    dropLog_.flush();
    size_t open = 0;
    {
      std::lock_guard lock(connectionsMutex_);
      open = connections_.size();
    }
    const bool full = handshaking_ >= kMaxHandshakes || open >= kMaxConnections;
    pollfd fds[2] = {{wake_.get(), POLLIN, 0}, {listen_.get(), full ? short{0} : short{POLLIN}, 0}};
    const int rc = poll(fds, 2, full ? 50 : 1000);
    if (rc < 0 && errno != EINTR) {
      log::warn("bootstrap store {}: poll failed: {}", address_.toString(), std::strerror(errno));
      usleep(100'000);
    }
    if (rc <= 0 || fds[0].revents) continue;
    if (fds[1].revents) acceptOneConnection();
  }
}

void Server::acceptOneConnection() {
  SockAddr from;
  from.length = sizeof(from.storage);
  const int fd = accept4(listen_.get(), reinterpret_cast<sockaddr*>(&from.storage), &from.length,
                         SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) {
    if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
      log::warn("bootstrap store {}: accept: {}", address_.toString(), std::strerror(errno));
      usleep(100'000);  // out of descriptors: let connections end instead of spinning
    }
    return;  // EAGAIN, ECONNABORTED, EINTR: nothing to accept after all
  }
  auto connection = std::make_unique<Connection>();
  connection->fd = Fd(fd);
  connection->peer = from.toString();
  connection->host = from.host();
  setNoDelay(fd);
  Connection* raw = connection.get();
  ++handshaking_;
  try {
    connection->thread = std::thread([this, raw] { serve(*raw); });
  } catch (const std::system_error& error) {
    --handshaking_;
    dropLog_.dropped(fmt::format("{}: no thread for it ({})", connection->peer, error.what()));
    return;
  }
  std::lock_guard lock(connectionsMutex_);
  connections_.push_back(std::move(connection));
}

void Server::reapFinished() {
  std::list<std::unique_ptr<Connection>> finished;
  {
    std::lock_guard lock(connectionsMutex_);
    for (auto it = connections_.begin(); it != connections_.end();) {
      auto next = std::next(it);
      if ((*it)->done) finished.splice(finished.end(), connections_, it);
      it = next;
    }
  }
  for (auto& connection : finished) connection->thread.join();
}

void Server::waitForClientsToLeave(const Deadline& deadline) {
  for (;;) {
    {
      std::lock_guard lock(connectionsMutex_);
      if (std::all_of(connections_.begin(), connections_.end(),
                      [](const auto& connection) { return connection->done.load(); }))
        return;
    }
    if (deadline.expired()) return;
    std::this_thread::sleep_for(5ms);
  }
}

void Server::serve(Connection& connection) {
  const std::string what = "store client " + connection.peer;
  if (handshake(connection, what)) {
    try {
      for (;;) {
        auto frame =
            wire::readFrame(connection.fd.get(), true, Deadline::never(), kFrameTime, what);
        if (!frame) break;
        handle(connection, *frame, what);
      }
      log::trace("bootstrap store {}: {} left", address_.toString(), connection.peer);
    } catch (const StoreState::Abandoned&) {
    } catch (const std::exception& error) {
      if (!stopping_) dropLog_.dropped(fmt::format("{}: {}", connection.peer, error.what()));
    }
  }
  // Let the peer see the end now; the descriptor itself is closed when the thread is reaped
  // (closing it here could race with the destructor's shutdown() of a reused number).
  ::shutdown(connection.fd.get(), SHUT_RDWR);
  connection.done = true;
}

bool Server::handshake(Connection& connection, const std::string& what) {
  const int fd = connection.fd.get();
  bool ok = false;
  try {
    const Deadline deadline = Deadline::after(kHandshakeTime);
    auto claim = wire::readFrame(fd, true, deadline,
                                 std::chrono::milliseconds(deadline.remainingMs()), what);
    if (claim) {
      handshakeAfterClaim(connection, *claim, deadline, what);
      ok = true;
    } else {
      // Closed without a byte: a probe whether anybody listens (hostRendezvous makes one), or a
      // port scan. It did nothing; a line for it would only bury the ones that matter.
      log::trace("bootstrap store {}: {} closed at once", address_.toString(), connection.peer);
    }
  } catch (const std::exception& error) {
    if (!stopping_) {
      state_.noteRefused(callerOf(connection), error.what());
      const Claim& claim = connection.claim;
      dropLog_.dropped(fmt::format("{}{} during the handshake: {}", connection.peer,
                                   claim.rank < 0
                                       ? ""
                                       : fmt::format(" (claiming rank {} of {}, {})", claim.rank,
                                                     claim.nranks, claim.identity),
                                   error.what()));
    }
  }
  --handshaking_;
  return ok;
}

void Server::handshakeAfterClaim(Connection& connection, const wire::Frame& claim,
                                 const Deadline& deadline, const std::string& what) {
  const int fd = connection.fd.get();
  connection.claim = wire::decodeClaim(claim, what);
  authenticateAsServer(fd, secret_, deadline, what);
  auto hello =
      wire::readFrame(fd, true, deadline, std::chrono::milliseconds(deadline.remainingMs()), what);
  if (!hello) raise(ErrorCode::kRemote, "{} closed the connection before HELLO", what);
  if (hello->type != Type::kHello || !hello->payload.empty())
    raise(ErrorCode::kRemote, "{} sent {} instead of HELLO", what, wire::typeName(hello->type));
  // With a secret, getting here proves membership; without one, only the launcher's job id
  // tells this job's ranks from anyone else's (docs/bootstrap.md, "Who may fail a job").
  connection.trusted = secret_.present || (!jobId_.empty() && connection.claim.jobId == jobId_);
  wire::writeFrame(fd, Type::kOk, {}, deadline, what);
}

Caller Server::callerOf(const Connection& connection) const {
  const Claim& claim = connection.claim;
  return Caller{claim.rank, claim.nranks, claim.identity, connection.host, connection.trusted};
}

void Server::handle(Connection& connection, const wire::Frame& frame, const std::string& what) {
  const int fd = connection.fd.get();
  const auto clientGone = [fd] {
    pollfd p{fd, POLLRDHUP, 0};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
  };
  // Parsing errors are the client's protocol violations: they end the connection. Errors of the
  // operation itself are answered and the connection carries on.
  const wire::Request request = wire::decodeRequest(frame, what);
  ByteWriter out;
  try {
    switch (request.type) {
      case Type::kSet: state_.set(request.key, request.value); break;
      case Type::kGet: out.str(state_.get(request.key, request.wait, clientGone)); break;
      case Type::kAdd: out.i64(state_.add(request.key, request.delta)); break;
      case Type::kCheck: out.u8(state_.check(request.key) ? 1 : 0); break;
      case Type::kJoin: {
        const Caller joiner{request.rank, request.nranks, request.key, connection.host,
                            connection.trusted};
        state_.join(joiner, request.wait, clientGone);
        break;
      }
      case Type::kFail: state_.reportFailure(callerOf(connection), request.value); break;
      default: break;  // decodeRequest lets no other type through
    }
  } catch (const Error& error) {
    const auto code = error.code() == ErrorCode::kInvalidUsage ? wire::ReplyCode::kInvalidUsage
                      : error.code() == ErrorCode::kTimeout    ? wire::ReplyCode::kTimeout
                                                               : wire::ReplyCode::kRemote;
    ByteWriter reply;
    reply.u8(static_cast<uint8_t>(code)).str(error.what());
    wire::writeFrame(fd, Type::kError, reply.bytes(), Deadline::after(kFrameTime), what);
    return;
  }
  wire::writeFrame(fd, Type::kOk, out.bytes(), Deadline::after(kFrameTime), what);
}

}  // namespace

std::unique_ptr<StoreServer> StoreServer::start(const SockAddr& address, const Secret& secret,
                                                const std::string& jobId,
                                                const StoreLimits& limits) {
  return std::make_unique<Server>(address, secret, jobId, limits);
}

}  // namespace tutti::bootstrap
