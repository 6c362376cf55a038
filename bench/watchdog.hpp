// -T: a thread that aborts the communicator when one armed stretch (a row) runs past its limit,
// so that a hung collective ends the run with a message instead of hanging it.
#pragma once

#include <tutti/tutti.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace tutti::bench {

class Watchdog {
 public:
  Watchdog(tuttiComm_t comm, double seconds);  // seconds <= 0: never fires, no thread
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void arm();
  void disarm();
  bool fired() const;

 private:
  void watch();

  tuttiComm_t comm_;
  std::chrono::duration<double> limit_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::chrono::steady_clock::time_point deadline_{};
  bool armed_ = false, fired_ = false, stopping_ = false;
  std::thread thread_;
};

}  // namespace tutti::bench
