#include "base/socket.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/error.hpp"

namespace tutti {

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) {
    reset();
    fd_ = other.release();
  }
  return *this;
}

void Fd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

SockAddr SockAddr::resolve(const std::string& host, int port) {
  if (port < 0 || port > 65535) raise(ErrorCode::kInvalidArgument, "port {} is out of range", port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc != 0 || !found)
    raise(ErrorCode::kInvalidArgument, "cannot resolve host '{}': {}", host, gai_strerror(rc));
  const addrinfo* pick = found;
  for (const addrinfo* ai = found; ai; ai = ai->ai_next)
    if (ai->ai_family == AF_INET) {
      pick = ai;
      break;
    }
  SockAddr address;
  std::memcpy(&address.storage, pick->ai_addr, pick->ai_addrlen);
  address.length = pick->ai_addrlen;
  freeaddrinfo(found);
  address.setPort(port);
  return address;
}

SockAddr SockAddr::ofFd(int fd) {
  SockAddr address;
  address.length = sizeof(address.storage);
  checkSys(getsockname(fd, reinterpret_cast<sockaddr*>(&address.storage), &address.length),
           "getsockname");
  return address;
}

int SockAddr::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  if (family() == AF_INET6)
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  return -1;
}

void SockAddr::setPort(int port) {
  if (family() == AF_INET) reinterpret_cast<sockaddr_in*>(&storage)->sin_port = htons(port);
  if (family() == AF_INET6) reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port = htons(port);
}

std::string SockAddr::host() const {
  char text[INET6_ADDRSTRLEN] = {};
  if (family() == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, text,
              sizeof(text));
  else if (family() == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr, text,
              sizeof(text));
  return text;
}

std::string SockAddr::toString() const {
  // fmt rather than string concatenation: GCC 12 at -O3 warns falsely (-Wrestrict) on the latter.
  if (family() == AF_INET6) return fmt::format("[{}]:{}", host(), port());
  return fmt::format("{}:{}", host(), port());
}

bool SockAddr::isLoopback() const {
  if (family() == AF_INET)
    return (ntohl(reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr.s_addr) >> 24) == 127;
  if (family() == AF_INET6)
    return IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr);
  return false;
}

Fd listenOn(const SockAddr& address, int backlog) {
  Fd fd(checkSys(socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC, 0), "socket"));
  const int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd.get(), reinterpret_cast<const sockaddr*>(&address.storage), address.length) != 0)
    throwSystemError("bind " + address.toString(), errno);
  checkSys(listen(fd.get(), backlog), "listen");
  return fd;
}

namespace {

// Waits until fd is ready for `events`; false when the deadline passed first.
bool waitReady(int fd, short events, const Deadline& deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int rc = poll(&p, 1, deadline.remainingMs());
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) throwSystemError("poll", errno);
  }
}

}  // namespace

Fd connectTo(const SockAddr& address, const Deadline& deadline) {
  int delayMs = 10;
  for (;;) {
    Fd fd(checkSys(socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0),
                   "socket"));
    int rc = connect(fd.get(), reinterpret_cast<const sockaddr*>(&address.storage), address.length);
    int err = rc == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      if (!waitReady(fd.get(), POLLOUT, deadline))
        raise(ErrorCode::kTimeout, "connect to {} timed out", address.toString());
      socklen_t len = sizeof(err);
      getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    }
    if (err == 0) {
      setNoDelay(fd.get());
      return fd;
    }
    if (err != ECONNREFUSED && err != ETIMEDOUT && err != ECONNRESET && err != EAGAIN)
      throwSystemError("connect to " + address.toString(), err);
    if (deadline.expired())
      raise(ErrorCode::kTimeout, "connect to {}: nobody listening before the deadline ({})",
            address.toString(), std::strerror(err));
    usleep(static_cast<useconds_t>(delayMs) * 1000);
    delayMs = std::min(delayMs * 2, 200);
  }
}

Fd acceptOne(int listenFd, const Deadline& deadline, SockAddr* peer) {
  for (;;) {
    if (!waitReady(listenFd, POLLIN, deadline)) return Fd();
    SockAddr from;
    from.length = sizeof(from.storage);
    const int fd = accept4(listenFd, reinterpret_cast<sockaddr*>(&from.storage), &from.length,
                           SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0) {
      setNoDelay(fd);
      if (peer) *peer = from;
      return Fd(fd);
    }
    if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
      throwSystemError("accept", errno);
  }
}

void writeAll(int fd, const void* data, size_t bytes, const Deadline& deadline,
              const std::string& what) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = send(fd, p, bytes, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) throwSystemError("send to " + what, errno);
    if (!waitReady(fd, POLLOUT, deadline))
      raise(ErrorCode::kTimeout, "send to {} timed out with {} bytes left", what, bytes);
  }
}

void readAll(int fd, void* data, size_t bytes, const Deadline& deadline, const std::string& what) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    const ssize_t n = recv(fd, p, bytes, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) raise(ErrorCode::kRemote, "{} closed the connection", what);
    if (errno == EINTR) continue;
    if (errno != EAGAIN) throwSystemError("recv from " + what, errno);
    if (!waitReady(fd, POLLIN, deadline))
      raise(ErrorCode::kTimeout, "receive from {} timed out with {} bytes missing", what, bytes);
  }
}

void setNonBlocking(int fd) {
  const int flags = checkSys(fcntl(fd, F_GETFL), "fcntl");
  checkSys(fcntl(fd, F_SETFL, flags | O_NONBLOCK), "fcntl");
}

void setNoDelay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

}  // namespace tutti
