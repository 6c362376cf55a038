// A rank of a process world: started by tuttirun, mpirun or torchrun, it initialises from the
// environment and runs seeded random cases of every collective, checking each against the
// independent reference. All-reduce outputs are also compared across ranks (a hash allgathered).
//   process_world [--seed S] [--cases-per-kind K] [--max-bytes B] [--min-bytes B] [--registered]
//                 [--registered-but-rank R] [--direct-on-rank R] [--refuse-ptrace] [--loop]
// --registered puts every case's buffers in tutti_mem_alloc memory; --registered-but-rank R
// every rank's but R's, which keeps ordinary memory. --direct-on-rank R forces rank R's all-reduce
// to the direct algorithm (tutti_comm_set_algorithm), the others' left to the planner.
// --refuse-ptrace makes the process one that its peers may not ptrace, so the kernel refuses
// their copies from and into its memory: not dumpable, and without CAP_SYS_PTRACE (with which
// root would pass anyway).
// --loop all-reduces forever after printing "ready" (for the killed-rank tests). Exit status 0
// when every case passed on this rank.
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "collective_check.hpp"

using namespace tutti::testing;

namespace {

uint64_t fnv1a(const std::vector<char>& bytes) {
  uint64_t hash = 1469598103934665603ULL;
  for (char byte : bytes) hash = (hash ^ static_cast<unsigned char>(byte)) * 1099511628211ULL;
  return hash;
}

bool refusePtrace() {
  if (prctl(PR_SET_DUMPABLE, 0) != 0) return false;
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct caps[2] = {};
  if (syscall(SYS_capget, &header, caps) != 0) return false;
  caps[0].effective &= ~(1u << CAP_SYS_PTRACE);
  caps[0].permitted &= ~(1u << CAP_SYS_PTRACE);
  return syscall(SYS_capset, &header, caps) == 0;
}

int fail(const char* what) {
  std::fprintf(stderr, "process_world: %s: %s\n", what, tutti_get_last_error());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t seed = 42;
  int casesPerKind = 4;
  size_t maxBytes = 1 << 20, minBytes = 0;
  bool loop = false, registered = false;
  int ordinaryRank = -1, directRank = -1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--seed" && i + 1 < argc)
      seed = std::strtoull(argv[++i], nullptr, 10);
    else if (arg == "--cases-per-kind" && i + 1 < argc)
      casesPerKind = std::atoi(argv[++i]);
    else if (arg == "--max-bytes" && i + 1 < argc)
      maxBytes = std::strtoull(argv[++i], nullptr, 10);
    else if (arg == "--registered")
      registered = true;
    else if (arg == "--min-bytes" && i + 1 < argc)
      minBytes = std::strtoull(argv[++i], nullptr, 10);
    else if (arg == "--registered-but-rank" && i + 1 < argc)
      ordinaryRank = std::atoi(argv[++i]);
    else if (arg == "--direct-on-rank" && i + 1 < argc)
      directRank = std::atoi(argv[++i]);
    else if (arg == "--refuse-ptrace") {
      if (!refusePtrace()) {
        std::perror("process_world: --refuse-ptrace");
        return 2;
      }
    } else if (arg == "--loop")
      loop = true;
    else {
      std::fprintf(stderr, "process_world: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  tuttiComm_t comm = nullptr;
  if (tutti_comm_init_env(&comm) != tuttiSuccess) return fail("init");
  int rank = 0, n = 0;
  tutti_comm_rank(comm, &rank);
  tutti_comm_size(comm, &n);
  registered = registered || (ordinaryRank >= 0 && rank != ordinaryRank);
  if (rank == directRank && tutti_comm_set_algorithm(comm, "direct") != tuttiSuccess)
    return fail("set_algorithm");

  if (loop) {
    std::vector<float> data(1 << 16, 1.0f);
    std::printf("ready rank %d\n", rank);
    std::fflush(stdout);
    for (;;)
      if (tutti_allreduce(data.data(), data.data(), data.size(), tuttiFloat32, tuttiMax, comm,
                          nullptr) != tuttiSuccess)
        return fail("allreduce in loop");
  }

  std::mt19937_64 rng(seed);
  int failures = 0, cases = 0;
  for (int i = 0; i < casesPerKind; ++i) {
    for (Kind kind : kAllKinds) {
      Case c = randomCase(rng, kind, n, maxBytes, minBytes);
      c.registered = registered;
      std::vector<char> output;
      const std::string problem = runCase(comm, c, &output);
      ++cases;
      if (!problem.empty()) {
        std::fprintf(stderr, "FAILED %s\n", problem.c_str());
        ++failures;
        continue;
      }
      if (kind != Kind::kAllReduce) continue;
      const uint64_t mine = fnv1a(output);
      std::vector<uint64_t> all(static_cast<size_t>(n));
      if (tutti_allgather(&mine, all.data(), 1, tuttiUint64, comm, nullptr) != tuttiSuccess)
        return fail("allgather of output hashes");
      for (int peer = 0; peer < n; ++peer)
        if (all[static_cast<size_t>(peer)] != mine) {
          std::fprintf(stderr, "FAILED %s: rank %d's output differs from rank %d's\n",
                       describe(c).c_str(), peer, rank);
          ++failures;
        }
    }
  }
  if (tutti_barrier(comm, nullptr) != tuttiSuccess) return fail("barrier");
  tutti_comm_destroy(comm);
  std::printf("rank %d/%d: %d cases, %d failed\n", rank, n, cases, failures);
  return failures == 0 ? 0 : 1;
}
