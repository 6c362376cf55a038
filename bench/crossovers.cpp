#include "bench/crossovers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <stdexcept>

namespace tutti::bench {
namespace {

// Seconds per size of one algorithm, in one placement.
using Times = std::map<size_t, double>;

struct Sweep {
  std::map<std::string, Times> outOfPlace, inPlace;
  std::vector<size_t> sizes;  // measured for every algorithm, ascending
};

Sweep sweepOf(const Results& results) {
  Sweep sweep;
  for (const ResultRow& row : results.rows) {
    if (row.collective != "allreduce") continue;
    sweep.outOfPlace[row.algorithm][row.bytes] = row.outOfPlace.seconds;
    sweep.inPlace[row.algorithm][row.bytes] = row.inPlace.seconds;
  }
  for (const char* name : {"oneshot", "ring", "tree", "direct"})
    if (!sweep.outOfPlace.count(name))
      throw std::runtime_error(fmt::format(
          "the sweep has no all-reduce rows of {} (tutti-bench allreduce --algo all)", name));
  for (const auto& [bytes, seconds] : sweep.outOfPlace["ring"]) {
    bool everywhere = bytes > 0;
    for (const auto& [name, times] : sweep.outOfPlace) everywhere &= times.count(bytes) > 0;
    if (everywhere) sweep.sizes.push_back(bytes);
  }
  if (sweep.sizes.empty())
    throw std::runtime_error("the sweep's algorithms share no size above 0 bytes");
  return sweep;
}

// Whether `name` was faster than each of `rivals` at `bytes`.
bool fastest(const std::map<std::string, Times>& times, const std::string& name,
             std::initializer_list<const char*> rivals, size_t bytes) {
  return std::all_of(rivals.begin(), rivals.end(), [&](const char* rival) {
    return times.at(name).at(bytes) < times.at(rival).at(bytes);
  });
}

// The longest run of consecutive measured sizes where direct beat the ring and the tree;
// nullopt when it never did.
std::optional<runtime::SizeRange> directWins(const Sweep& sweep,
                                             const std::map<std::string, Times>& times) {
  std::optional<runtime::SizeRange> best, run;
  auto span = [&sweep](const runtime::SizeRange& range) {
    return std::count_if(sweep.sizes.begin(), sweep.sizes.end(),
                         [&](size_t bytes) { return range.holds(bytes); });
  };
  for (const size_t bytes : sweep.sizes) {
    if (!fastest(times, "direct", {"ring", "tree"}, bytes)) {
      run.reset();
      continue;
    }
    run = run ? runtime::SizeRange{run->least, bytes} : runtime::SizeRange{bytes, bytes};
    if (!best || span(*run) > span(*best)) best = run;
  }
  return best;
}

}  // namespace

Crossovers crossovers(const Results& results, const runtime::Tuning& base) {
  const Sweep sweep = sweepOf(results);
  Crossovers out{base, {}};
  runtime::Tuning& table = out.table;
  // One-shot: up to the last size of the first run where it beat the others, in both placements.
  table.oneShotMaxBytes = 0;
  for (const size_t bytes : sweep.sizes) {
    if (!fastest(sweep.outOfPlace, "oneshot", {"ring", "tree"}, bytes) ||
        !fastest(sweep.inPlace, "oneshot", {"ring", "tree"}, bytes))
      break;
    table.oneShotMaxBytes = bytes;
  }
  if (table.oneShotMaxBytes == 0)
    out.notes.push_back(
        fmt::format("one-shot was not the fastest even at {} B: it is left for "
                    "empty messages only",
                    sweep.sizes.front()));
  // Direct never reaches sizes below direct_min_bytes, so an empty range is 0..0.
  const runtime::SizeRange never{0, 0};
  if (const auto wins = directWins(sweep, sweep.outOfPlace)) {
    table.directPullOutOfPlace = *wins;
    table.directMinBytes = wins->least;
  } else {
    table.directPullOutOfPlace = never;
    out.notes.push_back("direct never beat the ring and the tree out of place: it will not pull");
  }
  if (results.nranks == 2) {
    const auto wins = directWins(sweep, sweep.inPlace);
    table.directPullInPlace = wins ? *wins : never;
    if (!wins)
      out.notes.push_back("direct never beat the ring and the tree in place: it will not pull");
  } else {
    out.notes.push_back(
        fmt::format("{} ranks: direct pulls in place only with 2, direct_pull_in_place is kept",
                    results.nranks));
  }
  return out;
}

}  // namespace tutti::bench
