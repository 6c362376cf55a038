// Helpers shared by the bootstrap tests: an environment guard, a loopback store server and raw
// sockets that play strangers.
#pragma once

#include <poll.h>
#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "runtime/bootstrap/bootstrap.hpp"
#include "tests/error_of.hpp"
#include "tests/warnings.hpp"

namespace tutti::bootstrap::testing {

using namespace std::chrono_literals;

using tutti::tests::errorOf;
using tutti::tests::Warnings;

// Sets and unsets environment variables, restoring every touched one on destruction.
class EnvGuard {
 public:
  explicit EnvGuard(const std::vector<std::string>& clear = {}) {
    for (const std::string& name : clear) unset(name);
  }
  ~EnvGuard() {
    for (const auto& [name, value] : saved_) {
      if (value)
        setenv(name.c_str(), value->c_str(), 1);
      else
        unsetenv(name.c_str());
    }
  }
  void set(const std::string& name, const std::string& value) {
    save(name);
    setenv(name.c_str(), value.c_str(), 1);
  }
  void unset(const std::string& name) {
    save(name);
    unsetenv(name.c_str());
  }

 private:
  void save(const std::string& name) {
    if (saved_.count(name)) return;
    const char* value = std::getenv(name.c_str());
    saved_[name] = value ? std::optional<std::string>(value) : std::nullopt;
  }
  std::map<std::string, std::optional<std::string>> saved_;
};

inline SockAddr loopback() {
  return SockAddr::resolve("127.0.0.1", 0);
}

inline Secret secretOf(uint8_t fill) {
  Secret secret;
  secret.bytes.fill(fill);
  secret.present = true;
  return secret;
}

// True when the peer closed (or reset) the connection within `span`; bytes it sends are skipped.
inline bool closedWithin(int fd, std::chrono::milliseconds span) {
  const Deadline deadline = Deadline::after(span);
  char buffer[256];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, deadline.remainingMs()) <= 0) return false;
    const ssize_t n = recv(fd, buffer, sizeof(buffer), MSG_DONTWAIT);
    if (n == 0) return true;
    if (n < 0 && errno != EAGAIN && errno != EINTR) return true;
  }
}

}  // namespace tutti::bootstrap::testing
