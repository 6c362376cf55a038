// The all-reduce benchmark (all_reduce_perf): one rank of a job, set up from the environment.
#pragma once

#include "bench/options.hpp"

namespace tutti::bench {

// Runs the sweep; rank 0 prints the report on stdout. Returns the process exit status: 0, or 1
// when a check found wrong values. Throws std::runtime_error when a tutti call fails.
int runAllreduce(const BenchOptions& options);

}  // namespace tutti::bench
