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
  // waits for needs this core to make progress; it yields, so that the host's other ranks take
  // turns quickly. Any other waiter whose sleep ends as soon as the peer moves (`wokenByPeer`)
  // skips yielding: a yield keeps it runnable, so on cores shared with the application's threads
  // (DDP's backward) it would get the core back only when their slice ends, while a sleep leaves
  // them the core and wakes when there is something to do.
  explicit Backoff(bool oversubscribed = false, bool wokenByPeer = false)
      : rounds_(oversubscribed ? kSpinRounds : 0),
        yieldRounds_(wokenByPeer && !oversubscribed ? 0 : kYieldRounds) {}

  // One round of waiting, between polls of whatever is awaited: spins or yields and returns 0,
  // or, past those phases, returns the nanoseconds the caller should sleep (in a wait that ends
  // early when what it awaits arrives).
  long round();
  // A round that does its own sleeping, for a fixed time (a descriptor to sleep on may need arming
  // first: round() and sleepOn).
  void pause() { sleepOn(-1, round()); }
  void reset() { rounds_ = first_; }
  uint32_t rounds() const { return rounds_; }

  // Sleeps `ns` (none when 0), ended early when wakeFd (>= 0) becomes readable.
  static void sleepOn(int wakeFd, long ns);

 private:
  static constexpr uint32_t kYieldRounds = 4000;

  uint32_t rounds_;
  uint32_t first_ = rounds_;
  uint32_t yieldRounds_;
};

}  // namespace tutti
