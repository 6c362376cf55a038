// The measurement of one collective over every case (type, op, root) and size of the options, on
// one rank of a job; rank 0 prints the table as it goes.
#pragma once

#include <stdexcept>

#include "bench/collectives.hpp"
#include "bench/comm.hpp"
#include "bench/options.hpp"
#include "bench/results.hpp"

namespace tutti::bench {

// -T's limit reached: the communicator was aborted.
struct TimeoutError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct SweepOutcome {
  int status = 0;          // 1 when a check found wrong values
  Results results;         // rows and summary (machine fields left to the caller)
  int rowsBelowRatio = 0;  // --compare: rows whose ratio is below --min-ratio
  int rowsCompared = 0;    // --compare: rows the baseline has a counterpart of
};

// Throws std::runtime_error when a tutti call fails. Honours the test-only fault switch of
// fault.hpp.
SweepOutcome runSweep(const BenchOptions& options, const Comm& comm, const CollectiveSpec& spec,
                      const Results* baseline);

}  // namespace tutti::bench
