// Which CPU a communicator's engine thread (where asynchronous operations run) keeps to.
//
// Within a host the ranks' engines hand FIFO slots to each other; a waiting engine sleeps on a
// futex (transport/shm/doorbell.hpp), and the kernel wakes it on the waker's CPU unless it finds
// an idle CPU that shares the waker's last-level cache. Where the CPUs share none that the kernel
// knows of (cloud VMs whose vCPUs show no cache topology: /sys/devices/system/cpu/cpu0/cache is
// missing), two ranks' engines end up on one CPU and take turns there slot by slot while the other
// CPU idles: `perf sched` of a DDP step over 2 ranks on a 2-vCPU VM showed both engines on CPU 0
// for whole all-reduces, each woken by the other every 0.1-0.2 ms. There each engine keeps to a CPU
// of its own: the local rank's turn among the CPUs the process may use.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tutti::runtime {

// TUTTI_ENGINE_AFFINITY: auto (spread where the CPUs share no last-level cache), spread, none.
enum class EnginePlacement { kAuto, kSpread, kNone };

// The variable's word for each value: "auto", "spread", "none".
const char* choiceName(EnginePlacement placement);

// Whether some two of `cpus` share a last-level cache, as the kernel describes its caches under
// `cpuRoot` (/sys/devices/system/cpu): cpuN/cache/indexK with the highest level, its
// shared_cpu_list. A CPU without cache entries shares none.
bool shareLastLevelCache(const std::vector<int>& cpus, const std::string& cpuRoot);

// The CPU the engine of the host's local rank `localRank` keeps to, or none: with kNone, with
// fewer than two CPUs allowed, and with kAuto where some of them share a last-level cache (the
// kernel moves a woken engine to an idle one there).
std::optional<int> engineCpu(EnginePlacement placement, const std::vector<int>& allowed,
                             int localRank, bool sharedCache);

// Keeps the calling thread to engineCpu of this machine (its allowedCpus, base/allowed_cpus.hpp); a
// refusal from the kernel is logged (placement only speeds up).
void placeEngineThread(EnginePlacement placement, int localRank);

}  // namespace tutti::runtime
