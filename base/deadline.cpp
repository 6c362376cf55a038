#include "base/deadline.hpp"

#include <poll.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <climits>

#include "base/config.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tutti {
namespace {

// Spinning pays off only while the peer is running on another core; past Backoff::kSpinRounds we
// assume it is not and give the core away. The numbers come from 2-core runs with 2 and 8 ranks.
constexpr long kMaxSleepNs = 200'000;

void cpuRelax() {
#if defined(__x86_64__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

}  // namespace

Deadline Deadline::fromConfig() {
  return after(std::chrono::seconds(config::getInt("TUTTI_TIMEOUT")));
}

int Deadline::remainingMs() const {
  if (at_ == Clock::time_point::max()) return INT_MAX;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - Clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, INT_MAX));
}

long Backoff::round() {
  ++rounds_;
  if (rounds_ < kSpinRounds) {
    cpuRelax();
    return 0;
  }
  if (rounds_ < kSpinRounds + yieldRounds_) {
    sched_yield();
    return 0;
  }
  const uint32_t steps = std::min<uint32_t>(rounds_ - kSpinRounds - yieldRounds_, 16);
  return std::min<long>(1000L << (steps / 2), kMaxSleepNs);
}

void Backoff::sleepOn(int wakeFd, long ns) {
  if (ns == 0) return;
  timespec ts{0, ns};
  if (wakeFd >= 0) {
    pollfd waiter{wakeFd, POLLIN, 0};
    ppoll(&waiter, 1, &ts, nullptr);
  } else {
    nanosleep(&ts, nullptr);
  }
}

}  // namespace tutti
