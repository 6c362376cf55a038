// The CPUs the calling thread may run on (its affinity mask, sched_getaffinity), ascending: what
// oversubscription, a rank's place in the topology and its engine's CPU are worked out from.
#pragma once

#include <vector>

namespace tutti {

// Empty when the kernel refuses to say.
std::vector<int> allowedCpus();

}  // namespace tutti
