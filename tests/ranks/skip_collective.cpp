// A job in which one rank skips a collective: every rank all-reduces 1024 floats (sum) K-1 times;
// at call K the skipping rank prints "skipping rank R pid P" and sleeps instead, as a rank stuck
// in its own work would, while the others wait in call K until TUTTI_TIMEOUT fails it.
//   skip_collective --skip-rank R --at K
// Exit status: 0 for the skipping rank (when it wakes), 1 for a rank whose all-reduce failed.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tutti/tutti.h"

int main(int argc, char** argv) {
  int skipRank = -1, at = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string arg = argv[i];
    if (arg == "--skip-rank") skipRank = std::atoi(argv[i + 1]);
    if (arg == "--at") at = std::atoi(argv[i + 1]);
  }
  if (skipRank < 0 || at < 1) {
    std::fprintf(stderr, "usage: skip_collective --skip-rank R --at K\n");
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
  for (int call = 1; call <= at; ++call) {
    if (call == at && rank == skipRank) {
      std::printf("skipping rank %d pid %d\n", rank, static_cast<int>(getpid()));
      std::fflush(stdout);
      for (unsigned left = 120; left > 0;) left = sleep(left);  // signals interrupt sleep
      break;
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
