// tutti-bench: collective bandwidth in nccl-tests' format.
//
//   tutti-bench allreduce [-b 8] [-e 64M] [-f 2 | -i BYTES] [-n 20] [-w 5] [-c 1] [-d float]
//                         [-o sum] [-z 0] [--ranks N]
//
// Without --ranks the process is one rank of a job started by a launcher (tuttirun, mpirun,
// torchrun, srun: tutti_comm_init_env reads their variables). With --ranks N it starts N local
// ranks of itself through the launch library; rank 0's report reaches the inherited stdout.
#include <fmt/format.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "bench/allreduce.hpp"
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
  try {
    if (parsed.options.ranks > 0) return spawnSelf(parsed.options, argc, argv);
    return tutti::bench::runAllreduce(parsed.options);
  } catch (const std::exception& e) {
    fmt::print(stderr, "tutti-bench: {}\n", e.what());
    return 1;
  }
}
