// Sockets with deadlines: every connect, accept, read and write gives up when its deadline passes,
// so a silent peer can delay us but never hang us.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <string>

#include "base/deadline.hpp"

namespace tutti {

// Owns a file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&& other) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset();

 private:
  int fd_ = -1;
};

struct SockAddr {
  sockaddr_storage storage{};
  socklen_t length = 0;

  // Numeric host or name, resolved with getaddrinfo (IPv4 first). Throws kInvalidArgument.
  static SockAddr resolve(const std::string& host, int port);
  static SockAddr ofFd(int fd);  // getsockname
  int family() const { return storage.ss_family; }
  int port() const;
  void setPort(int port);
  std::string host() const;      // numeric
  std::string toString() const;  // "host:port", IPv6 in brackets
  bool isLoopback() const;
};

Fd listenOn(const SockAddr& address, int backlog);
// Retries refused connections (the listener may not be up yet) until the deadline.
Fd connectTo(const SockAddr& address, const Deadline& deadline);
// Returns an invalid Fd when the deadline passes with nobody connecting.
Fd acceptOne(int listenFd, const Deadline& deadline, SockAddr* peer = nullptr);

// Blocking-with-deadline transfers on a (possibly non-blocking) socket. readAll throws kRemote on
// EOF and kTimeout when the deadline passes; `what` names the peer in the message.
void writeAll(int fd, const void* data, size_t bytes, const Deadline& deadline,
              const std::string& what);
void readAll(int fd, void* data, size_t bytes, const Deadline& deadline, const std::string& what);

void setNonBlocking(int fd);
void setNoDelay(int fd);

}  // namespace tutti
