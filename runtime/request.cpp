#include "runtime/request.hpp"

namespace tutti::runtime {

void Request::complete() {
  std::lock_guard lock(mutex_);
  done_.store(true, std::memory_order_release);
  cv_.notify_all();
}

void Request::fail(const Error& error) {
  std::lock_guard lock(mutex_);
  error_ = error;
  done_.store(true, std::memory_order_release);
  cv_.notify_all();
}

void Request::rethrow() const {
  if (error_) throw *error_;
}

bool Request::waitFor(std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  std::unique_lock lock(mutex_);
  const auto finished = [this] { return done(); };
  // wait_for adds the timeout to now() in nanoseconds, which overflows past ~292 years (9.2e12
  // ms) into a deadline already passed: a timeout that long is a wait without end.
  const auto longest = std::chrono::duration_cast<std::chrono::milliseconds>(
      Clock::time_point::max() - Clock::now());
  if (timeout >= longest) {
    cv_.wait(lock, finished);
    return true;
  }
  return cv_.wait_for(lock, timeout, finished);
}

void Request::wait() {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [this] { return done(); });
}

}  // namespace tutti::runtime
