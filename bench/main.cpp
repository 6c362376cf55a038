// tutti-bench: collective bandwidth in nccl-tests' format.
//
//   tutti-bench COLLECTIVE [-b 8] [-e 64M] [-f 2 | -i BYTES] [-n 20] [-w 5] [-m 1] [-c 1]
//                          [-d float|all] [-o sum|all] [-r 0|all] [-a 1] [-N 1] [-T SECONDS] [-u]
//                          [-I] [-M] [-z 0] [--algo NAME|all] [--transport shm|tcp]
//                          [--buffers host] [--quiet|--verbose] [--ranks N]
//
// COLLECTIVE: allreduce reducescatter allgather broadcast reduce alltoall sendrecv barrier.
//
// Without --ranks the process is one rank of a job started by a launcher (tuttirun, mpirun,
// torchrun, srun: tutti_comm_init_env reads their variables). With --ranks N it starts N local
// ranks of itself through the launch library; rank 0's report reaches the inherited stdout.
#include <fmt/format.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "bench/benchmark.hpp"
#include "bench/json_report.hpp"
#include "bench/options.hpp"
#include "tools/launch/launch.hpp"

namespace {

std::string selfPath(const char* argv0) {
  char path[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return argv0;
  return std::string(path, static_cast<size_t>(n));
}

int spawnSelf(const tutti::bench::BenchOptions& options, int argc, const char* const* argv) {
  tutti::launch::Options launch;
  launch.nranks = options.ranks;
  launch.argv = tutti::bench::argvWithoutRanks(argc, argv);
  launch.argv[0] = selfPath(argv[0]);
  launch.launcherName = "tutti-bench";
  return tutti::launch::spawnRanks(launch).exitCode;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // rows appear as they are measured
  tutti::bench::ParseResult parsed = tutti::bench::parseCommandLine(argc, argv);
  if (!parsed.run) {
    std::fputs(parsed.message.c_str(), parsed.exitCode ? stderr : stdout);
    return parsed.exitCode;
  }
  // Before init here, and inherited by spawned ranks.
  if (!parsed.options.transport.empty())
    setenv("TUTTI_TRANSPORT", parsed.options.transport.c_str(), 1);
  // Read before anything runs: a bad baseline is bad input.
  std::optional<tutti::bench::Results> baseline;
  if (!parsed.options.comparePath.empty()) {
    try {
      baseline = tutti::bench::readJson(parsed.options.comparePath);
    } catch (const std::exception& e) {
      fmt::print(stderr, "tutti-bench: --compare: {}\n", e.what());
      return 2;
    }
  }
  try {
    if (parsed.options.ranks > 0) return spawnSelf(parsed.options, argc, argv);
    return tutti::bench::runBenchmark(parsed.options, baseline ? &*baseline : nullptr);
  } catch (const std::exception& e) {
    fmt::print(stderr, "tutti-bench: {}\n", e.what());
    return 1;
  }
}
