// A job in which one rank skips a collective: every rank all-reduces 1024 floats (sum) K-1 times;
// at call K the skipping rank prints "skipping rank R pid P" and sleeps instead, as a rank stuck
// in its own work would, while the others wait in call K until TUTTI_TIMEOUT fails it.
// With --stop it stops itself instead (SIGSTOP, as a debugger or a job scheduler would stop it)
// and, once continued, goes on into call K and beyond (up to K+9) after the others have given up
// on it, until a call fails.
//   skip_collective --skip-rank R --at K [--stop]
// Exit status: 0 for the skipping rank (when it wakes), 1 for a rank whose all-reduce failed.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tutti/tutti.h"

int main(int argc, char** argv) {
  int skipRank = -1, at = 0;
  bool stop = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--stop") stop = true;
    if (arg == "--skip-rank" && i + 1 < argc) skipRank = std::atoi(argv[++i]);
    if (arg == "--at" && i + 1 < argc) at = std::atoi(argv[++i]);
  }
  if (skipRank < 0 || at < 1) {
    std::fprintf(stderr, "usage: skip_collective --skip-rank R --at K [--stop]\n");
    return 2;
  }
  tuttiComm_t comm = nullptr;
  if (tutti_comm_init_env(&comm) != tuttiSuccess) {
    std::fprintf(stderr, "skip_collective: init: %s\n", tutti_get_last_error());
    return 1;
  }
  int rank = 0;
  tutti_comm_rank(comm, &rank);
  std::vector<float> data(1024, 1.0f);
  const int calls = stop ? at + 9 : at;
  for (int call = 1; call <= calls; ++call) {
    if (call == at && rank == skipRank) {
      std::printf("%s rank %d pid %d\n", stop ? "stopping" : "skipping", rank,
                  static_cast<int>(getpid()));
      std::fflush(stdout);
      if (stop) {
        raise(SIGSTOP);
      } else {
        for (unsigned left = 120; left > 0;) left = sleep(left);  // signals interrupt sleep
        break;
      }
    }
    if (tutti_allreduce(data.data(), data.data(), data.size(), tuttiFloat32, tuttiSum, comm,
                        nullptr) != tuttiSuccess) {
      std::fprintf(stderr, "skip_collective: rank %d, call %d: %s\n", rank, call,
                   tutti_get_last_error());
      return 1;
    }
  }
  tutti_comm_destroy(comm);
  return 0;
}
