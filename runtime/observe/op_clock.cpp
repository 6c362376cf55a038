#include "runtime/observe/op_clock.hpp"

#include <fstream>
#include <string>
#include <string_view>
#include <thread>

namespace tutti::runtime::opclock {

bool tscTrusted(std::string_view clocksource, std::string_view cpuFlags) {
  if (clocksource == "tsc") return true;
  const std::string words = " " + std::string(cpuFlags) + " ";
  auto has = [&](const char* flag) {
    return words.find(" " + std::string(flag) + " ") != std::string::npos;
  };
  return has("constant_tsc") && has("nonstop_tsc") && has("tsc_reliable");
}

bool usesTsc() {
  static const bool tsc = [] {
    std::ifstream source("/sys/devices/system/clocksource/clocksource0/current_clocksource");
    std::string clocksource;
    source >> clocksource;
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    while (std::getline(cpuinfo, line) && line.rfind("flags", 0) != 0) {
    }
    const size_t colon = line.find(':');
    return tscTrusted(clocksource, colon == std::string::npos ? "" : line.substr(colon + 1));
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
