// The one error type of tutti: a code (mirroring tuttiResult_t, checked in runtime/c_api.cpp) and a
// message that says what went wrong and where. Exceptions carry it inside the library; the C API
// turns it into a result code.
#pragma once

#include <fmt/format.h>

#include <cerrno>
#include <stdexcept>
#include <string>

namespace tutti {

enum class ErrorCode {
  kInvalidArgument = 1,
  kInvalidUsage = 2,
  kSystem = 3,
  kRemote = 4,
  kTimeout = 5,
  kInternal = 6,
};

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, std::string message)
      : std::runtime_error(std::move(message)), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

template <typename... Args>
[[noreturn]] void raise(ErrorCode code, fmt::format_string<Args...> format, Args&&... args) {
  throw Error(code, fmt::format(format, std::forward<Args>(args)...));
}

// Throws kSystem with errno's text when a C call returned -1.
void throwSystemError(const std::string& what, int err);
inline int checkSys(int rc, const char* what) {
  if (rc == -1) throwSystemError(what, errno);
  return rc;
}

}  // namespace tutti
