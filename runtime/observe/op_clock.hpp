// Timestamps for the flight recorder's hot path. Reading the steady clock costs ~80 ns on the
// 2-core Intel VM of the benchmarks (28 on the AMD one, whose clock is kvm-clock), over a tenth
// of an 8-byte all-reduce; the TSC ~35 ns there (11 on the AMD VM, a few on bare metal). Where
// the TSC is trustworthy, a stamp is TSC ticks, turned into steady-clock nanoseconds only when
// read out; elsewhere it is steady-clock nanoseconds already. Trustworthy: the kernel keeps time
// with it (clocksource "tsc"), or the CPU says it is invariant (constant_tsc, nonstop_tsc) and the
// hypervisor vouches that it is synchronised across vCPUs (tsc_reliable: the kernel then skips
// its own sync check) -- a VM's kernel may still keep time with kvm-clock, which reads the same
// TSC through a shared page, at twice the cost.
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace tutti::runtime::opclock {

inline int64_t steadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Wall-clock nanoseconds since the epoch: read next to steadyNs() it lines ranks' times up.
inline int64_t wallNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Whether the TSC can be trusted, from the kernel's clocksource and /proc/cpuinfo's flags line.
bool tscTrusted(std::string_view clocksource, std::string_view cpuFlags);
bool usesTsc();  // tscTrusted on this machine, decided once per process

// Never 0 (0 marks "not yet" in the recorder).
inline int64_t stamp() {
#if defined(__x86_64__)
  static const bool tsc = usesTsc();
  if (tsc) return static_cast<int64_t>(__rdtsc()) | 1;
#endif
  return steadyNs();
}

// A stamp and the steady time read together: where conversions start from. Taken on first use;
// the flight recorder takes it when it is made, before any stamp it keeps.
struct Origin {
  int64_t stamp;
  int64_t ns;
};
const Origin& origin();

// Converts stamps to steady-clock nanoseconds, with the TSC's rate measured between the origin and
// the making of the converter (one converter serves a whole dump).
class Converter {
 public:
  Converter();
  int64_t toSteadyNs(int64_t stamp) const;

 private:
  Origin origin_;
  double nsPerTick_ = 0;  // 0: stamps are nanoseconds
};

}  // namespace tutti::runtime::opclock
