// -I: the spread of the timed iterations of one placement, from each iteration's own time; and
// --rounds: which of a placement's rounds it reports.
#pragma once

#include <cstddef>
#include <vector>

namespace tutti::bench {

struct IterationStats {
  double min = 0, max = 0, p50 = 0, p95 = 0, p99 = 0;  // seconds per operation
  double mean = 0, stdev = 0;
  double cv = 0;  // standard deviation / mean
};

// Nearest-rank percentiles over the samples (seconds); all zero when there are none.
IterationStats iterationStats(std::vector<double> samples);

// The index of the round of median time among `seconds` (one per round, not empty): the lower of
// the two middle ones for an even count. A measured round, not an average of two, so that its
// bandwidth and statistics are reported with it; and a round the machine slowed or sped moves
// nothing.
size_t medianRound(const std::vector<double>& seconds);

}  // namespace tutti::bench
