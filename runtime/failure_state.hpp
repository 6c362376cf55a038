// A communicator's failure: the first error wins and fails every later operation with the same
// message; whether it was aborted. Cheap to ask on the healthy path (one relaxed-acquire load),
// safe from any thread.
#pragma once

#include <atomic>
#include <mutex>
#include <optional>

#include "base/error.hpp"

namespace tutti::runtime {

class FailureState {
 public:
  // Keeps `error` when it is the first; true then.
  bool keep(const Error& error);
  std::optional<Error> failure() const;
  void throwIfFailed() const {
    // A lock-free look first keeps the healthy path cheap.
    if (failed_.load(std::memory_order_acquire)) throwKept();
  }
  void markAborted() { aborted_.store(true); }
  bool aborted() const { return aborted_.load(std::memory_order_relaxed); }

 private:
  [[noreturn]] void throwKept() const;

  std::atomic<bool> aborted_{false};
  std::atomic<bool> failed_{false};
  mutable std::mutex mutex_;
  std::optional<Error> failure_;
};

}  // namespace tutti::runtime
