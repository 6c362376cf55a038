#include "runtime/engine_placement.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "base/allowed_cpus.hpp"
#include "base/log.hpp"

namespace tutti::runtime {
namespace {

// The CPUs of a kernel CPU list ("0-3,8"); what does not parse ends the list.
std::set<int> parseCpuList(const std::string& text) {
  std::set<int> cpus;
  size_t at = 0;
  while (at < text.size()) {
    size_t used = 0;
    int first = 0, last = 0;
    try {
      first = last = std::stoi(text.substr(at), &used);
      at += used;
      if (at < text.size() && text[at] == '-') {
        last = std::stoi(text.substr(at + 1), &used);
        at += used + 1;
      }
    } catch (const std::exception&) {
      break;
    }
    // No CPU set holds more: a range beyond it names nothing this process can run on.
    for (int cpu = std::max(first, 0); cpu <= std::min(last, CPU_SETSIZE - 1); ++cpu)
      cpus.insert(cpu);
    if (at >= text.size() || text[at] != ',') break;
    ++at;
  }
  return cpus;
}

std::string firstLine(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

// The CPUs that share `cpu`'s last-level cache (itself included); none when sysfs lists no cache.
std::set<int> lastLevelSharers(int cpu, const std::string& cpuRoot) {
  const std::filesystem::path caches =
      std::filesystem::path(cpuRoot) / ("cpu" + std::to_string(cpu)) / "cache";
  std::error_code error;
  int highest = 0;
  std::set<int> sharers;
  // The forms that report errors, not throw them: this runs on the engine's own thread.
  for (std::filesystem::directory_iterator entry(caches, error), end; !error && entry != end;
       entry.increment(error)) {
    if (entry->path().filename().string().rfind("index", 0) != 0) continue;
    int level = 0;
    try {
      level = std::stoi(firstLine(entry->path() / "level"));
    } catch (const std::exception&) {
      continue;
    }
    if (level <= highest) continue;
    highest = level;
    sharers = parseCpuList(firstLine(entry->path() / "shared_cpu_list"));
  }
  return sharers;
}

}  // namespace

const char* choiceName(EnginePlacement placement) {
  switch (placement) {
    case EnginePlacement::kAuto: return "auto";
    case EnginePlacement::kSpread: return "spread";
    case EnginePlacement::kNone: return "none";
  }
  return "?";
}

bool shareLastLevelCache(const std::vector<int>& cpus, const std::string& cpuRoot) {
  for (int cpu : cpus) {
    const std::set<int> sharers = lastLevelSharers(cpu, cpuRoot);
    for (int other : cpus)
      if (other != cpu && sharers.count(other)) return true;
  }
  return false;
}

std::optional<int> engineCpu(EnginePlacement placement, const std::vector<int>& allowed,
                             int localRank, bool sharedCache) {
  if (placement == EnginePlacement::kNone || allowed.size() < 2 || localRank < 0) return {};
  if (placement == EnginePlacement::kAuto && sharedCache) return {};
  return allowed[static_cast<size_t>(localRank) % allowed.size()];
}

void placeEngineThread(EnginePlacement placement, int localRank) {
  if (placement == EnginePlacement::kNone) return;
  const std::vector<int> allowed = allowedCpus();
  const bool shared = placement == EnginePlacement::kAuto &&
                      shareLastLevelCache(allowed, "/sys/devices/system/cpu");
  const std::optional<int> cpu = engineCpu(placement, allowed, localRank, shared);
  if (!cpu) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(*cpu, &set);
  if (const int error = pthread_setaffinity_np(pthread_self(), sizeof(set), &set); error != 0) {
    log::warn("engine of local rank {}: keeping to CPU {} was refused: {}", localRank, *cpu,
              std::strerror(error));
    return;
  }
  log::info("engine of local rank {} keeps to CPU {} (TUTTI_ENGINE_AFFINITY={})", localRank, *cpu,
            choiceName(placement));
}

}  // namespace tutti::runtime
