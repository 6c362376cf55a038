#include "runtime/operation_timeout.hpp"

#include "base/config.hpp"
#include "base/error.hpp"

namespace tutti::runtime {

void OperationTimeout::set(std::chrono::milliseconds timeout, int rank) {
  // TUTTI_TIMEOUT's range, in milliseconds; below a second is allowed.
  constexpr int64_t maxMs = config::kTimeoutMaxSeconds * 1000;
  if (timeout.count() < 1 || timeout.count() > maxMs)
    raise(ErrorCode::kInvalidArgument,
          "rank {}: timeout_ms {} is out of range [1, {}] (1 ms to TUTTI_TIMEOUT's maximum)", rank,
          timeout.count(), maxMs);
  ms_.store(timeout.count(), std::memory_order_relaxed);
}

}  // namespace tutti::runtime
