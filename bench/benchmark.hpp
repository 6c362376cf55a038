// The benchmark of one collective (nccl-tests' *_perf): one rank of a job, set up from the
// environment.
// The measurement itself is sweep.hpp's.
#pragma once

#include "bench/options.hpp"
#include "bench/results.hpp"

namespace tutti::bench {

// Runs the sweep; rank 0 prints the report on stdout and writes -J / --csv / --plot. Returns the
// process exit status: 0; 1 when a check found wrong values, a row's ratio to `baseline`
// (--compare; may be null) is below --min-ratio or the average busbw below --min-busbw; 2 when the
// root is not a rank of the job. Throws std::runtime_error when a tutti call fails.
// Under a *_perf name the status is nccl-tests' instead: 0, or kNcclTestsFailed when a check found
// wrong values or the average busbw is below NCCL_TESTS_MIN_BW less 10%.
int runBenchmark(const BenchOptions& options, const Results* baseline);

}  // namespace tutti::bench
