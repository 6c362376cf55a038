#include "bench/iteration_stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tutti::bench {

IterationStats iterationStats(std::vector<double> samples) {
  IterationStats s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  auto percentile = [&](double p) {
    size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(n)));
    return samples[std::clamp<size_t>(rank, 1, n) - 1];
  };
  s.min = samples.front();
  s.max = samples.back();
  s.p50 = percentile(50);
  s.p95 = percentile(95);
  s.p99 = percentile(99);
  const double mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(n);
  double squares = 0;
  for (double x : samples) squares += (x - mean) * (x - mean);
  s.mean = mean;
  s.stdev = std::sqrt(squares / static_cast<double>(n));
  s.cv = mean > 0 ? s.stdev / mean : 0;
  return s;
}

size_t medianRound(const std::vector<double>& seconds) {
  std::vector<size_t> order(seconds.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return seconds[a] < seconds[b]; });
  return order.at((order.size() - 1) / 2);
}

}  // namespace tutti::bench
