#include "base/error.hpp"

#include <cstring>

namespace tutti {

void throwSystemError(const std::string& what, int err) {
  throw Error(ErrorCode::kSystem, fmt::format("{}: {} (errno {})", what, std::strerror(err), err));
}

}  // namespace tutti
