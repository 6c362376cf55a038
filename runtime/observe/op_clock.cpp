#include "runtime/observe/op_clock.hpp"

#include <fstream>
#include <string>
#include <thread>

namespace tutti::runtime::opclock {

bool usesTsc() {
  static const bool tsc = [] {
    std::ifstream source("/sys/devices/system/clocksource/clocksource0/current_clocksource");
    std::string name;
    return (source >> name) && name == "tsc";
  }();
  return tsc;
}

const Origin& origin() {
  static const Origin first{stamp(), steadyNs()};
  return first;
}

Converter::Converter() : origin_(origin()) {
#if !defined(__x86_64__)
  return;  // stamps are nanoseconds already
#endif
  if (!usesTsc()) return;
  // The rate is measured since the origin; give it at least a millisecond to be precise.
  if (steadyNs() - origin_.ns < 1000000) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const int64_t nowStamp = stamp(), nowNs = steadyNs();
  nsPerTick_ =
      static_cast<double>(nowNs - origin_.ns) / static_cast<double>(nowStamp - origin_.stamp);
}

int64_t Converter::toSteadyNs(int64_t value) const {
  if (nsPerTick_ == 0) return value;
  return origin_.ns + static_cast<int64_t>(static_cast<double>(value - origin_.stamp) * nsPerTick_);
}

}  // namespace tutti::runtime::opclock
