#include "bench/watchdog.hpp"

namespace tutti::bench {

Watchdog::Watchdog(tuttiComm_t comm, double seconds) : comm_(comm), limit_(seconds) {
  if (seconds > 0) thread_ = std::thread([this] { watch(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Watchdog::arm() {
  {
    std::lock_guard lock(mutex_);
    deadline_ = std::chrono::steady_clock::now() +
                std::chrono::duration_cast<std::chrono::steady_clock::duration>(limit_);
    armed_ = true;
  }
  changed_.notify_all();
}

void Watchdog::disarm() {
  std::lock_guard lock(mutex_);
  armed_ = false;
}

bool Watchdog::fired() const {
  std::lock_guard lock(mutex_);
  return fired_;
}

void Watchdog::watch() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (!armed_) {
      changed_.wait(lock);
    } else if (changed_.wait_until(lock, deadline_) == std::cv_status::timeout && armed_ &&
               std::chrono::steady_clock::now() >= deadline_) {
      fired_ = true;
      armed_ = false;
      tutti_comm_abort(comm_);
    }
  }
}

}  // namespace tutti::bench
