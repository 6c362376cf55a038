// How a listener that strangers can reach (the store server, a tcp data port) reports the
// connections it drops: the first few of a burst each get a WARN
// line, the rest are counted and summarised ("N more dropped connections in the last 10 s") at
// most once per window. A stranger scanning the port, or a misconfigured job knocking all the
// time, would otherwise write a line per attempt (1,704 in a minute were seen) and bury the one
// that matters.
#pragma once

#include <chrono>
#include <mutex>
#include <string>

namespace tutti {

class DropLog {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr int kBurst = 5;  // lines logged one by one per window, after a quiet one
  static constexpr std::chrono::seconds kWindow{10};

  // `where` starts every line ("bootstrap store 10.0.0.1:5000", "tcp: rank 2's data port").
  explicit DropLog(std::string where);
  // Writes any summary still owed.
  ~DropLog();
  DropLog(const DropLog&) = delete;
  DropLog& operator=(const DropLog&) = delete;

  // One dropped connection; `message` says whose and why.
  void dropped(const std::string& message, Clock::time_point now = Clock::now());
  // Writes the summary of a window that has ended; the server calls it about once a second, so
  // that a burst that stopped is still summarised.
  void flush(Clock::time_point now = Clock::now());

 private:
  void flushLocked(Clock::time_point now, bool force);

  std::string where_;
  std::mutex mutex_;
  Clock::time_point windowStart_;
  int logged_ = 0;       // lines written one by one in this window
  long suppressed_ = 0;  // dropped connections counted but not written in this window
  std::string latest_;   // the last of those, quoted in the summary
};

}  // namespace tutti
