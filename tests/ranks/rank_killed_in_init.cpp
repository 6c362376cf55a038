// A rank that dies by SIGKILL in init right after creating its shared-memory segment, before any
// peer mapped it: the moment at which a killed rank leaves its segment's name in /dev/shm. It
// creates the segment through the shm transport, as a rank's init does, with the job's secret
// from TUTTI_SECRET, prints the segment's name, and kills itself.
//   rank_killed_in_init   (under tuttirun, or with TUTTI_SECRET, TUTTI_RANK, TUTTI_WORLD_SIZE set)
#include <signal.h>

#include <cstdio>
#include <cstdlib>

#include "transport/transport.hpp"

int main() {
  const char* secret = std::getenv("TUTTI_SECRET");
  const char* rank = std::getenv("TUTTI_RANK");
  const char* size = std::getenv("TUTTI_WORLD_SIZE");
  if (!secret || !rank || !size) {
    std::fprintf(stderr, "rank_killed_in_init: TUTTI_SECRET, TUTTI_RANK, TUTTI_WORLD_SIZE unset\n");
    return 2;
  }
  tutti::transport::Options options;
  options.rank = std::atoi(rank);
  options.nranks = std::atoi(size);
  options.jobTag = "wkilled";
  options.secret = tutti::Secret::fromHex(secret).value();
  const auto shm = tutti::transport::makeShmTransport(options);
  std::printf("%s\n", shm->localAddress().c_str());
  std::fflush(stdout);
  raise(SIGKILL);
}
