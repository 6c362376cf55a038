// tutti-bench tune's choice of streaming stores (kernels::Stores; the tuning key
// shm_streaming_min_bytes): two sweeps of the fixed all-reduce algorithms over shared memory, one
// with plain stores and one with streaming stores at every size, compared size by size through
// each size's fastest algorithm, both placements. Streaming runs from the size where it gained
// most, summed as log time ratios over that size and every larger one (the key is a threshold):
// a noisy size among many that agree does not move it. The planner's crossovers are then read
// off the rows it will run: streaming's from that size, plain ones below.
#pragma once

#include <cstddef>

#include "bench/results.hpp"

namespace tutti::bench {

struct StreamingChoice {
  size_t minBytes;  // `never` where streaming gained from no size on
  Results merged;   // the sweep a planner with that threshold runs
};

// Throws std::runtime_error when the sweeps differ in ranks, in the all-reduce rows they hold
// (algorithm and size), or hold a time that is not a positive number, or no size above 0.
StreamingChoice chooseStreaming(const Results& plain, const Results& streaming, size_t never);

}  // namespace tutti::bench
