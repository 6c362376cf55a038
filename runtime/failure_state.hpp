// A communicator's failure: the first error wins and fails every later operation with the same
// message; whether it was aborted; whether it was retired (shrunk into a new communicator), which
// overrules any failure before it. Cheap to ask on the healthy path (one relaxed-acquire load),
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
  // From now on every operation fails with `why`, whatever failed before: a communicator that was
  // shrunk must say so, not repeat the death that led to the shrink.
  void retire(const Error& why);
  // Throws the retirement's error once retired: for the calls a failure alone does not stop
  // (split, shrink, setting the algorithm).
  void throwIfRetired() const {
    if (retired_.load(std::memory_order_acquire)) throwKept();
  }

 private:
  [[noreturn]] void throwKept() const;

  std::atomic<bool> aborted_{false};
  std::atomic<bool> failed_{false};
  std::atomic<bool> retired_{false};
  mutable std::mutex mutex_;
  std::optional<Error> failure_;
};

}  // namespace tutti::runtime
