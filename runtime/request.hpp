// The completion state of one operation, shared between whoever runs it and whoever waits.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>

#include "base/error.hpp"

namespace tutti::runtime {

class Request {
 public:
  void complete();
  void fail(const Error& error);
  bool done() const { return done_.load(std::memory_order_acquire); }
  // Rethrows the operation's error, if any; only valid once done().
  void rethrow() const;
  // Waits (sleeping) until done; false when the timeout passed first.
  bool waitFor(std::chrono::milliseconds timeout);
  void wait();

 private:
  std::atomic<bool> done_{false};
  std::optional<Error> error_;
  std::mutex mutex_;
  std::condition_variable cv_;
};

}  // namespace tutti::runtime
