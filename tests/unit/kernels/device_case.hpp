// One collective of the device protocol on CPU threads (device_ring.hpp), checked against
// model.hpp's independent reference: every rank's output, its bits against rank 0's where every
// rank holds the same result, every byte of every buffer outside the output unchanged (sources,
// the rest of an in-place buffer, a non-root's reduce output, guard bytes). Inputs are seeded
// small integers, so the result is exact in any order of reduction; a failure prints its case.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/ops.hpp"
#include "tests/unit/kernels/device_ring.hpp"
#include "tests/unit/kernels/model.hpp"

namespace tutti::kernels::test {

enum class Protocol { kSimple, kLL };

struct Case {
  Protocol protocol;
  int nranks;
  int nchannels;
  size_t count;  // the C API's count
  bool inPlace;
  bool aligned;  // else each rank's buffers start a few elements past a 64-byte boundary
  uint64_t seed;
  int teamSize = 1;  // threads per rank and channel (a thread block's, on the GPU)
  // Small, so that a few thousand elements take many chunks and sections.
  uint32_t slotBytes = 96;
  Collective collective = Collective::kAllReduce;
  Algorithm algorithm = Algorithm::kRing;
  int root = 0;  // broadcast, reduce
  // The rings' ranks in ring order, channel c running orders[c % size]; none: rank order.
  std::vector<std::vector<int>> orders = {};
};

std::string describe(DataType dtype, RedOp op, const Case& c);

// One collective on `ring`; returns the number of wrong elements (see the file's comment).
int runCase(DeviceRing& ring, DataType dtype, RedOp op, const Case& c);

// `c` on a ring of its own; fails the running test case, printing the case, on any wrong element.
void check(DataType dtype, RedOp op, const Case& c);

}  // namespace tutti::kernels::test
