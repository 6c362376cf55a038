// tutti-bench: collective bandwidth in nccl-tests' format.
//
//   tutti-bench COLLECTIVE [-b 8] [-e 64M] [-f 2 | -i BYTES] [-n 20] [-w 5] [-m 1] [-c 1]
//                          [-d float|all] [-o sum|all] [-r 0|all] [-a 1] [-N 1] [-T SECONDS] [-u]
//                          [-I] [-M] [-z 0] [--algo NAME|all] [--rounds 1] [--transport shm|tcp]
//                          [--buffers host] [--device auto] [--quiet|--verbose] [--ranks N]
//   tutti-bench tune --ranks N -o FILE|--save [-b 8] [-e 64M] [-f 2] [-n 20] [-w 5] [--rounds 1]
//                    [--transport shm|tcp]
//   tutti-bench tune --from SWEEP.json -o FILE|--save
//
// COLLECTIVE: allreduce reducescatter allgather broadcast reduce alltoall sendrecv barrier.
//
// Started as all_reduce_perf, all_gather_perf, ... (the links meson makes), it is nccl-tests'
// program of that name instead: its flags, output, JSON and exit statuses (docs/nccl-tests.md).
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
#include "bench/nccl_tests_args.hpp"
#include "bench/nccl_tests_report.hpp"
#include "bench/options.hpp"
#include "bench/sweep.hpp"
#include "bench/tune.hpp"
#include "tools/launch/launch.hpp"

namespace {

std::string selfPath(const char* argv0) {
  char path[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return argv0;
  return std::string(path, static_cast<size_t>(n));
}

int spawnSelf(int nranks, std::vector<std::string> argv, const char* launcherName) {
  tutti::launch::Options launch;
  launch.nranks = nranks;
  launch.argv = std::move(argv);
  launch.launcherName = launcherName;
  return tutti::launch::spawnRanks(launch).exitCode;
}

int spawnSelf(const tutti::bench::BenchOptions& options, int argc, const char* const* argv) {
  std::vector<std::string> args = tutti::bench::argvWithoutRanks(argc, argv);
  args[0] = selfPath(argv[0]);
  return spawnSelf(options.ranks, std::move(args), "tutti-bench");
}

// Started by a launcher other than tutti's (which sets TUTTI_WORLD_SIZE for each rank it starts).
bool underForeignLauncher() {
  for (const char* name :
       {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "SLURM_PROCID", "WORLD_SIZE"}) {
    if (std::getenv(name)) return true;
  }
  return false;
}

// One rank of a *_perf job, with nccl-tests' exit statuses for what goes wrong.
int runNcclTestsRank(const std::string& program, const tutti::bench::BenchOptions& options) {
  namespace bench = tutti::bench;
  try {
    return bench::runBenchmark(options, nullptr);
  } catch (const bench::TimeoutError& e) {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    std::printf("%s: Test timeout (%ds)\n", host, static_cast<int>(options.timeoutSeconds));
    fmt::print(stderr, "{}: {}\n", program, e.what());
    return bench::kNcclTestsTimeout;
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: {}\n", program, e.what());
    return bench::kNcclTestsError;
  }
}

// The *_perf programs. -t T -g G: T*G ranks per process, which tutti runs as T*G processes of
// one rank each, started here; under mpirun or srun each process must be one rank.
int runNcclTests(const std::string& program, int argc, char** argv) {
  namespace bench = tutti::bench;
  if (bench::ncclTestsCollective(program)->empty()) {
    fmt::print(stderr, "{}: tutti has no such collective (the *_perf programs it has: {})\n",
               program,
               "all_reduce_perf, all_gather_perf, reduce_scatter_perf, broadcast_perf, "
               "reduce_perf, alltoall_perf, sendrecv_perf");
    return 5;  // nccl-tests' testNotImplemented
  }
  bench::NcclTestsParse parsed = bench::parseNcclTestsArgs(program, argc, argv);
  bench::printEcho(parsed.notices);
  if (!parsed.run) {
    std::fputs(parsed.message.c_str(), parsed.exitCode ? stderr : stdout);
    return parsed.exitCode;
  }
  const bench::BenchOptions& options = parsed.options;
  const int perProcess = options.nccl.threads * options.nccl.gpus;
  // Without any launcher, nccl-tests runs one process of T*G ranks: here T*G local processes.
  if (!std::getenv("TUTTI_WORLD_SIZE") && underForeignLauncher() && perProcess > 1) {
    fmt::print(stderr,
               "{}: -t {} -g {} asks for {} ranks per process; tutti runs one rank per process "
               "under a launcher: start {} times as many processes with -t 1 -g 1\n",
               program, options.nccl.threads, options.nccl.gpus, perProcess, perProcess);
    return bench::kNcclTestsBadArgs;
  }
  if (!std::getenv("TUTTI_WORLD_SIZE") && !underForeignLauncher()) {
    // argv[0] as given (a path, or found in PATH as it was): /proc/self/exe would name
    // tutti-bench, and the ranks would not know they are `program`.
    return spawnSelf(perProcess, std::vector<std::string>(argv, argv + argc), program.c_str());
  }
  return runNcclTestsRank(program, options);
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // rows appear as they are measured
  const std::string program = tutti::bench::programName(argv[0]);
  if (tutti::bench::ncclTestsCollective(program)) return runNcclTests(program, argc, argv);
  if (argc > 1 && std::string(argv[1]) == "tune")
    return tutti::bench::runTune(argc, argv, selfPath(argv[0]));
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
