// -I: the spread of the timed iterations of one placement, from each iteration's own time.
#pragma once

#include <vector>

namespace tutti::bench {

struct IterationStats {
  double min = 0, max = 0, p50 = 0, p95 = 0, p99 = 0;  // seconds per operation
  double mean = 0, stdev = 0;
  double cv = 0;  // standard deviation / mean
};

// Nearest-rank percentiles over the samples (seconds); all zero when there are none.
IterationStats iterationStats(std::vector<double> samples);

}  // namespace tutti::bench
