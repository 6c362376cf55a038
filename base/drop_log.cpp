#include "base/drop_log.hpp"

#include <algorithm>

#include "base/log.hpp"

namespace tutti {

DropLog::DropLog(std::string where) : where_(std::move(where)), windowStart_(Clock::now()) {}

DropLog::~DropLog() {
  std::lock_guard lock(mutex_);
  flushLocked(Clock::now(), true);
}

void DropLog::dropped(const std::string& message, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  flushLocked(now, false);
  if (logged_ < kBurst) {
    ++logged_;
    log::warn("{}: dropped connection from {}", where_, message);
    return;
  }
  ++suppressed_;
  latest_ = message;
}

void DropLog::flush(Clock::time_point now) {
  std::lock_guard lock(mutex_);
  flushLocked(now, false);
}

void DropLog::flushLocked(Clock::time_point now, bool force) {
  if (!force && now - windowStart_ < kWindow) return;
  const auto seconds = std::chrono::round<std::chrono::seconds>(now - windowStart_);
  windowStart_ = now;
  if (suppressed_ == 0) {
    logged_ = 0;  // a window without excess: the next burst is logged line by line again
    return;
  }
  log::warn("{}: {} more dropped connections in the last {} s (the latest from {})", where_,
            suppressed_, std::max<long>(1, seconds.count()), latest_);
  // Still busy: the next window is summarised only, so a steady stream costs a line per window.
  suppressed_ = 0;
  logged_ = kBurst;
}

}  // namespace tutti
