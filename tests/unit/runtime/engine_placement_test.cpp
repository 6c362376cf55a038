// Where each communicator's engine thread runs: which CPUs sysfs says share a last-level cache,
// the CPU each local rank's engine keeps to, and that the engine applies it on its own thread.
#include "runtime/engine_placement.hpp"

#include <pthread.h>
#include <sched.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "base/allowed_cpus.hpp"
#include "runtime/engine.hpp"
#include "tests/temp_dir.hpp"

using namespace tutti::runtime;
using tutti::allowedCpus;
namespace fs = std::filesystem;

namespace {

// A directory laid out as /sys/devices/system/cpu describes caches.
struct FakeCpuTree : tutti::testing::TempDir {
  FakeCpuTree() : TempDir("tutti-cpus") {}
  void cache(int cpu, int index, int level, const std::string& shared) const {
    const fs::path dir =
        path / ("cpu" + std::to_string(cpu)) / "cache" / ("index" + std::to_string(index));
    fs::create_directories(dir);
    std::ofstream(dir / "level") << level << "\n";
    std::ofstream(dir / "shared_cpu_list") << shared << "\n";
  }
};

std::vector<int> affinityOf(pthread_t thread) {
  cpu_set_t set;
  std::vector<int> cpus;
  REQUIRE(pthread_getaffinity_np(thread, sizeof(set), &set) == 0);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  return cpus;
}

// The calling thread's CPUs after `placement` of local rank `localRank`, on a thread of its own.
std::vector<int> placedOnThread(EnginePlacement placement, int localRank) {
  std::vector<int> cpus;
  std::thread([&] {
    placeEngineThread(placement, localRank);
    cpus = affinityOf(pthread_self());
  }).join();
  return cpus;
}

}  // namespace

TEST_CASE("engine placement: which CPUs share a last-level cache, as sysfs lists them",
          "[runtime][engine-placement]") {
  FakeCpuTree tree;
  // Two packages of two CPUs each; level-2 caches of their own, one level-3 cache per package.
  for (int cpu = 0; cpu < 4; ++cpu) {
    tree.cache(cpu, 0, 1, std::to_string(cpu));
    tree.cache(cpu, 2, 2, std::to_string(cpu));
    tree.cache(cpu, 3, 3, cpu < 2 ? "0-1" : "2,3");
  }
  const std::string root = tree.path.string();
  CHECK(shareLastLevelCache({0, 1}, root));
  CHECK(shareLastLevelCache({2, 3}, root));
  CHECK(shareLastLevelCache({0, 2, 3}, root));
  CHECK_FALSE(shareLastLevelCache({0, 2}, root));  // across packages
  CHECK_FALSE(shareLastLevelCache({1}, root));
  // CPUs the tree says nothing of (a VM without cache topology) share nothing.
  CHECK_FALSE(shareLastLevelCache({4, 5}, root));
  CHECK_FALSE(shareLastLevelCache({0, 1}, (tree.path / "absent").string()));
  // A last level each CPU has alone (vCPUs shown with caches of their own).
  FakeCpuTree own;
  own.cache(0, 3, 3, "0");
  own.cache(1, 3, 3, "1");
  CHECK_FALSE(shareLastLevelCache({0, 1}, own.path.string()));
  // Lists are read as far as they parse, ranges no further than a CPU set reaches.
  FakeCpuTree odd;
  odd.cache(0, 3, 3, "0-2147483647");
  odd.cache(1, 3, 3, "x1");
  odd.cache(2, 3, 3, "2,0-");
  CHECK(shareLastLevelCache({0, 1}, odd.path.string()));
  CHECK_FALSE(shareLastLevelCache({1, 3}, odd.path.string()));
  CHECK_FALSE(shareLastLevelCache({2, 3}, odd.path.string()));
  // The highest level counts, whatever its index.
  FakeCpuTree reordered;
  reordered.cache(0, 0, 3, "0-1");
  reordered.cache(0, 1, 2, "0");
  CHECK(shareLastLevelCache({0, 1}, reordered.path.string()));
}

TEST_CASE("engine placement: local ranks take the allowed CPUs in turn where they share no cache",
          "[runtime][engine-placement]") {
  const std::vector<int> allowed{4, 6, 9};
  CHECK(engineCpu(EnginePlacement::kAuto, allowed, 0, false) == 4);
  CHECK(engineCpu(EnginePlacement::kAuto, allowed, 1, false) == 6);
  CHECK(engineCpu(EnginePlacement::kAuto, allowed, 4, false) == 6);  // more ranks than CPUs
  CHECK_FALSE(engineCpu(EnginePlacement::kAuto, allowed, 1, true));  // the kernel spreads them
  CHECK(engineCpu(EnginePlacement::kSpread, allowed, 2, true) == 9);
  CHECK_FALSE(engineCpu(EnginePlacement::kNone, allowed, 1, false));
  CHECK_FALSE(engineCpu(EnginePlacement::kSpread, {3}, 1, false));  // one CPU: nothing to choose
  CHECK_FALSE(engineCpu(EnginePlacement::kSpread, allowed, -1, false));
}

TEST_CASE("engine placement: the thread keeps to its CPU, or stays as it was",
          "[runtime][engine-placement]") {
  const std::vector<int> allowed = allowedCpus();
  REQUIRE_FALSE(allowed.empty());
  CHECK(affinityOf(pthread_self()) == allowed);
  CHECK(placedOnThread(EnginePlacement::kNone, 1) == allowed);
  if (allowed.size() < 2) {
    CHECK(placedOnThread(EnginePlacement::kSpread, 1) == allowed);
    return;
  }
  CHECK(placedOnThread(EnginePlacement::kSpread, 1) == std::vector<int>{allowed[1]});
  CHECK(placedOnThread(EnginePlacement::kSpread, static_cast<int>(allowed.size())) ==
        std::vector<int>{allowed[0]});
  CHECK(affinityOf(pthread_self()) == allowed);  // only the placed thread changed
}

TEST_CASE("engine: its worker thread runs the start hook before any task",
          "[runtime][engine-placement]") {
  std::promise<pthread_t> started;
  pthread_t ran{};
  Engine engine([](const tutti::Error&) {}, [&] { started.set_value(pthread_self()); });
  engine.submit([&] { ran = pthread_self(); })->wait();
  CHECK(pthread_equal(started.get_future().get(), ran));
  CHECK_FALSE(pthread_equal(ran, pthread_self()));
}
