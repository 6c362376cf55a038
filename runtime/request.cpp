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
  std::unique_lock lock(mutex_);
  return cv_.wait_for(lock, timeout, [this] { return done(); });
}

void Request::wait() {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [this] { return done(); });
}

}  // namespace tutti::runtime
