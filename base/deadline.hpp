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
  // One round of waiting; call between polls of whatever is awaited.
  void pause();
  void reset() { rounds_ = 0; }
  uint32_t rounds() const { return rounds_; }

 private:
  uint32_t rounds_ = 0;
};

}  // namespace tutti
