#include "runtime/failure_state.hpp"

namespace tutti::runtime {

bool FailureState::keep(const Error& error) {
  std::lock_guard lock(mutex_);
  if (failure_) return false;
  failure_ = error;
  failed_.store(true, std::memory_order_release);
  return true;
}

void FailureState::retire(const Error& why) {
  std::lock_guard lock(mutex_);
  failure_ = why;
  failed_.store(true, std::memory_order_release);
  retired_.store(true, std::memory_order_release);
}

std::optional<Error> FailureState::failure() const {
  std::lock_guard lock(mutex_);
  return failure_;
}

void FailureState::throwKept() const {
  std::lock_guard lock(mutex_);
  throw *failure_;
}

}  // namespace tutti::runtime
