// What auto runs for an all-reduce, and why, from the functions the runtime itself calls: the
// planner's choice (cheapestAlgorithm); then, where it picks direct for outputs read through the
// kernel, direct's own (directPullPays) and its fallback, the cheapest of the rest (runInstead).
// tutti-info algorithms prints it.
#pragma once

#include <cstddef>
#include <string>

#include "runtime/collectives/algorithm.hpp"
#include "runtime/settings.hpp"

namespace tutti::runtime {

struct AllReduceCase {
  size_t bytes;
  int ranks;          // all on one host, or one per host (RankShape::flat)
  bool sharedMemory;  // every rank on one host over shm
  bool inPlace;
  // Every output from tutti_mem_alloc, mapped by the peers (direct pushes); else ordinary ones,
  // read through the kernel (direct pulls, where it pays)...
  bool registered;
  // ...unless TUTTI_DIRECT_BUFFERS=registered leaves them out (the rest of the table runs).
  DirectBuffers directBuffers = DirectBuffers::kAny;
};

struct AllReduceChoice {
  const Algorithm* algorithm;
  std::string why;
};

AllReduceChoice explainAllReduce(const Tuning& tuning, const LinkModel& link,
                                 const AllReduceCase& call);

}  // namespace tutti::runtime
