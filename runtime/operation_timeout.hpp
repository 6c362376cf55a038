// How long a wait of a communicator's operations (and of split) may stall before it fails with
// kTimeout: settings.timeout until set() changes it. Local to this rank. Any thread may set it
// while the engine runs; a wait reads it when its stall begins, so operations that start after
// the call use it and a wait already stalled keeps the bound it began with.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace tutti::runtime {

class OperationTimeout {
 public:
  explicit OperationTimeout(std::chrono::milliseconds initial) : ms_(initial.count()) {}
  std::chrono::milliseconds get() const {
    return std::chrono::milliseconds(ms_.load(std::memory_order_relaxed));
  }
  // 1 ms to TUTTI_TIMEOUT's maximum (kInvalidArgument otherwise, naming the value and `rank`).
  void set(std::chrono::milliseconds timeout, int rank);

 private:
  std::atomic<int64_t> ms_;
};

}  // namespace tutti::runtime
