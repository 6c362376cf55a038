#include "bench/streaming_stores.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <stdexcept>
#include <utility>
#include <vector>

namespace tutti::bench {
namespace {

// Per size, the fastest fixed algorithm's seconds out of place and in place.
using Fastest = std::map<size_t, std::pair<double, double>>;

Fastest fastestOf(const Results& results) {
  Fastest fastest;
  for (const ResultRow& row : results.rows) {
    if (row.collective != "allreduce" || row.algorithm == "auto") continue;
    const double infinity = std::numeric_limits<double>::infinity();
    auto [at, added] = fastest.try_emplace(row.bytes, infinity, infinity);
    at->second.first = std::min(at->second.first, row.outOfPlace.seconds);
    at->second.second = std::min(at->second.second, row.inPlace.seconds);
  }
  return fastest;
}

// Throws unless every all-reduce row of `sweep` (named `name`) has usable times and a match in
// `other` (named `otherName`): a size or algorithm measured once cannot be compared, and the
// merged sweep would lose it.
void checkRows(const Results& sweep, const char* name, const Results& other,
               const char* otherName) {
  for (const ResultRow& row : sweep.rows) {
    if (row.collective != "allreduce") continue;
    for (const double seconds : {row.outOfPlace.seconds, row.inPlace.seconds})
      if (!(seconds > 0) || !std::isfinite(seconds))
        throw std::runtime_error(
            fmt::format("the sweep with {} has a time of {} s for {} at {} bytes", name, seconds,
                        row.algorithm, row.bytes));
    if (!findMatch(other.rows, row))
      throw std::runtime_error(
          fmt::format("the sweep with {} has {} at {} bytes, the one with {} not", name,
                      row.algorithm, row.bytes, otherName));
  }
}

}  // namespace

StreamingChoice chooseStreaming(const Results& plain, const Results& streaming, size_t never) {
  if (plain.nranks != streaming.nranks)
    throw std::runtime_error(
        fmt::format("the sweeps ran {} and {} ranks", plain.nranks, streaming.nranks));
  checkRows(plain, "plain stores", streaming, "streaming stores");
  checkRows(streaming, "streaming stores", plain, "plain stores");
  const Fastest withPlain = fastestOf(plain), withStreaming = fastestOf(streaming);
  std::vector<size_t> sizes;
  for (const auto& [bytes, times] : withPlain)
    if (bytes > 0) sizes.push_back(bytes);
  if (sizes.empty()) throw std::runtime_error("the sweeps have no all-reduce above 0 bytes");
  // From the largest size down, so that among equal sums the fewest sizes stream.
  size_t from = never;
  double sum = 0, best = 0;
  for (auto size = sizes.rbegin(); size != sizes.rend(); ++size) {
    const auto [plainOut, plainIn] = withPlain.at(*size);
    const auto [streamOut, streamIn] = withStreaming.at(*size);
    sum += std::log(plainOut / streamOut) + std::log(plainIn / streamIn);
    if (sum > best) {
      best = sum;
      from = *size;
    }
  }
  StreamingChoice choice{from, plain};
  std::erase_if(choice.merged.rows, [&](const ResultRow& row) { return row.bytes >= from; });
  std::copy_if(streaming.rows.begin(), streaming.rows.end(), std::back_inserter(choice.merged.rows),
               [&](const ResultRow& row) { return row.bytes >= from; });
  return choice;
}

}  // namespace tutti::bench
