// Deadlines for every wait, and the waiting policy: spin briefly, then yield, then sleep with a
// growing interval, so that 8 ranks on 2 cores all make progress and nobody burns a core for long.
#pragma once

#include <chrono>
#include <cstdint>

namespace tutti {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  static Deadline after(std::chrono::milliseconds span) { return Deadline(Clock::now() + span); }
  static Deadline never() { return Deadline(Clock::time_point::max()); }
  // TUTTI_TIMEOUT seconds from now.
  static Deadline fromConfig();

  bool expired() const { return Clock::now() >= at_; }
  // Milliseconds left, clamped to [0, INT32_MAX]: what poll() takes.
  int remainingMs() const;
  Clock::time_point at() const { return at_; }

 private:
  explicit Deadline(Clock::time_point at) : at_(at) {}
  Clock::time_point at_;
};

class Backoff {
 public:
  static constexpr uint32_t kSpinRounds = 2000;
  // An oversubscribed waiter (more ranks on the host than cores) skips spinning: the peer it
  // waits for needs this core to make progress.
  explicit Backoff(bool oversubscribed = false) : rounds_(oversubscribed ? kSpinRounds : 0) {}

  // One round of waiting; call between polls of whatever is awaited. Past the spinning and
  // yielding phases, a wakeFd >= 0 ends the sleep early when it becomes readable.
  void pause(int wakeFd = -1);
  void reset() { rounds_ = first_; }
  uint32_t rounds() const { return rounds_; }

 private:
  uint32_t rounds_;
  uint32_t first_ = rounds_;
};

}  // namespace tutti
