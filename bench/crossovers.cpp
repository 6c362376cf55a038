#include "bench/crossovers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <variant>

namespace tutti::bench {
namespace {

using runtime::Tuning;

// Seconds per size of one algorithm, in one placement.
using Times = std::map<size_t, double>;

struct Sweep {
  std::map<std::string, Times> outOfPlace, inPlace;
  std::vector<size_t> sizes;  // measured for every algorithm, ascending
};

Sweep sweepOf(const Results& results) {
  if (results.nranks < 2)
    throw std::runtime_error(
        fmt::format("the sweep ran {} rank(s): crossovers need 2 or more", results.nranks));
  Sweep sweep;
  for (const ResultRow& row : results.rows) {
    if (row.collective != "allreduce") continue;
    for (const double seconds : {row.outOfPlace.seconds, row.inPlace.seconds})
      if (!(seconds > 0) || !std::isfinite(seconds))
        throw std::runtime_error(fmt::format("the sweep's {} row at {} bytes has a time of {} s",
                                             row.algorithm, row.bytes, seconds));
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

// How much faster `name` ran than the fastest of `rivals` at `bytes`, as log(rival / name):
// positive where it won. Logs, so that gains and losses at different sizes weigh alike, and one
// noisy sample cannot outweigh many clean ones.
double gain(const std::map<std::string, Times>& times, const std::string& name,
            std::initializer_list<const char*> rivals, size_t bytes) {
  double rival = std::numeric_limits<double>::infinity();
  for (const char* other : rivals) rival = std::min(rival, times.at(other).at(bytes));
  return std::log(rival / times.at(name).at(bytes));
}

// The run of consecutive measured sizes whose gains (gainAt of each size) sum highest (the fewest
// sizes among equals); nullopt where no run gained.
template <typename GainAt>
std::optional<runtime::SizeRange> bestRun(const Sweep& sweep, GainAt gainAt) {
  std::optional<runtime::SizeRange> best;
  double bestGain = 0;
  size_t bestSpan = 0;
  for (size_t first = 0; first < sweep.sizes.size(); ++first) {
    double sum = 0;
    for (size_t last = first; last < sweep.sizes.size(); ++last) {
      sum += gainAt(sweep.sizes[last]);
      const size_t span = last - first + 1;
      if (sum > bestGain || (best && sum == bestGain && span < bestSpan)) {
        best = runtime::SizeRange{sweep.sizes[first], sweep.sizes[last]};
        bestGain = sum;
        bestSpan = span;
      }
    }
  }
  return best;
}

// Where direct gained most over the ring and the tree in all.
std::optional<runtime::SizeRange> directWins(const Sweep& sweep,
                                             const std::map<std::string, Times>& times) {
  return bestRun(sweep, [&](size_t bytes) {
    return gain(times, "direct", {"ring", "tree"}, bytes);
  });
}

// Where `name` gained most over the fastest of `rivals`, both placements counted, each size's
// gain less 5% a placement: algorithms often tie, and a tie the noise tips must not hand sizes to
// `name`. Each placement's gain is held within 25% either way: a lone time ten times the others'
// (4 ranks on 2 cores over TCP, a ring at 4M: 10.6 ms among 1.9-9 ms) must not outweigh two sizes
// the rivals won clearly.
std::optional<runtime::SizeRange> clearWins(const Sweep& sweep, const std::string& name,
                                            std::initializer_list<const char*> rivals) {
  const double margin = std::log(1.05), cap = std::log(1.25);
  const auto held = [&](const std::map<std::string, Times>& times, size_t bytes) {
    return std::clamp(gain(times, name, rivals, bytes), -cap, cap) - margin;
  };
  return bestRun(sweep, [&](size_t bytes) {
    return held(sweep.outOfPlace, bytes) + held(sweep.inPlace, bytes);
  });
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// The cost model's link figures from the ring's times out of place, which the model prices as
// 2(n-1) steps and 2(n-1)/n of the bytes: the step from sizes of 4 KiB and less, where the bytes
// hardly count, then the bandwidth from 1 MiB up, then the step again without the bytes' share.
// Medians: a noisy size moves neither. A note where the sweep cannot tell.
void fitLinkCosts(const Sweep& sweep, const Results& results, bool tcp, Tuning& table,
                  std::vector<std::string>& notes) {
  const double n = results.nranks, steps = 2 * (n - 1), share = 2 * (n - 1) / n;
  const Times& ring = sweep.outOfPlace.at("ring");
  std::vector<double> small, large;
  for (const size_t bytes : sweep.sizes)
    (bytes <= 4096 ? small : large).push_back(static_cast<double>(bytes));
  std::erase_if(large, [](double bytes) { return bytes < (1 << 20); });
  if (small.empty() || large.empty()) {
    notes.push_back(
        "the sweep lacks sizes of 4K and less or of 1M and more: the cost model's "
        "link figures are kept");
    return;
  }
  const auto us = [&](double bytes) { return ring.at(static_cast<size_t>(bytes)) * 1e6; };
  const auto stepUs = [&](double usPerByte) {
    std::vector<double> each;
    for (const double bytes : small)
      each.push_back((us(bytes) - share * bytes * usPerByte) / steps);
    return std::max(median(each), 0.01);
  };
  std::vector<double> perByte;
  const double roughStep = stepUs(0);
  for (const double bytes : large)
    perByte.push_back(std::max(us(bytes) - steps * roughStep, 0.0) / (share * bytes));
  const double usPerByte = std::max(median(perByte), 1e-8);
  // Within the keys' ranges, so that the file reads back.
  const auto fit = [](double Tuning::*field, double value) {
    const runtime::TuningKey& key = runtime::tuningKeyOf(field);
    return std::clamp(value, key.min, key.max);
  };
  const auto step = tcp ? &Tuning::tcpStepUs : &Tuning::shmStepUs;
  const auto gbs = tcp ? &Tuning::tcpGBs : &Tuning::shmGBs;
  table.*step = fit(step, stepUs(usPerByte));
  table.*gbs = fit(gbs, 1 / (usPerByte * 1000));
}

// Where direct (forced, so pulling at every size) gained over the ring and the tree, in both
// placements (in place with 2 ranks only).
void directRanges(const Sweep& sweep, int nranks, Tuning& table, std::vector<std::string>& notes) {
  // Direct never reaches sizes below direct_min_bytes, so an empty range is 0..0.
  const runtime::SizeRange never{0, 0};
  if (const auto wins = directWins(sweep, sweep.outOfPlace)) {
    table.directPullOutOfPlace = *wins;
    table.directMinBytes = wins->least;
  } else {
    table.directPullOutOfPlace = never;
    notes.push_back(
        "direct gained over the ring and the tree at no run of sizes out of place: it will not "
        "pull");
  }
  if (nranks == 2) {
    const auto wins = directWins(sweep, sweep.inPlace);
    table.directPullInPlace = wins ? *wins : never;
    if (!wins)
      notes.push_back(
          "direct gained over the ring and the tree at no run of sizes in place: it will not pull");
  } else {
    notes.push_back(fmt::format(
        "{} ranks: direct pulls in place only with 2, direct_pull_in_place is kept", nranks));
  }
}

}  // namespace

std::optional<bool> overTcp(const Results& results) {
  const auto has = [&](const char* name) {
    return std::find(results.transports.begin(), results.transports.end(), name) !=
           results.transports.end();
  };
  std::set<std::string> hosts;
  for (const RankInfo& rank : results.ranks) hosts.insert(rank.host);
  const bool tcp = has("tcp") || (has("default") && hosts.size() > 1);
  const bool shm = has("shm") || (has("default") && hosts.size() <= 1);
  if (tcp == shm) return std::nullopt;
  return tcp;
}

Crossovers crossovers(const Results& results, const runtime::Tuning& base) {
  const Sweep sweep = sweepOf(results);
  Crossovers out{base, {}};
  runtime::Tuning& table = out.table;
  const std::optional<bool> tcp = overTcp(results);
  // One-shot: up to the size where it gained most over the ring and the tree in all, both
  // placements counted (the smallest among equals).
  size_t& oneShotMax = tcp.value_or(false) ? table.tcpOneShotMaxBytes : table.oneShotMaxBytes;
  oneShotMax = 0;
  double sum = 0, best = 0;
  for (const size_t bytes : sweep.sizes) {
    sum += gain(sweep.outOfPlace, "oneshot", {"ring", "tree"}, bytes) +
           gain(sweep.inPlace, "oneshot", {"ring", "tree"}, bytes);
    if (sum > best) {
      best = sum;
      oneShotMax = bytes;
    }
  }
  if (oneShotMax == 0)
    out.notes.push_back(fmt::format(
        "one-shot gained over the ring and the tree at no run of sizes from {} B: it is left for "
        "empty messages only",
        sweep.sizes.front()));
  if (!tcp)
    out.notes.push_back(fmt::format("transports {}: the cost model's link figures are kept",
                                    fmt::join(results.transports, ",")));
  else
    fitLinkCosts(sweep, results, *tcp, table, out.notes);
  // The tree against the ring, over the link swept (shared memory where the sweep cannot tell).
  runtime::SizeRange& treeOverRing =
      tcp.value_or(false) ? table.tcpTreeOverRing : table.treeOverRing;
  const std::optional<runtime::SizeRange> treeAhead = clearWins(sweep, "tree", {"ring"});
  treeOverRing = treeAhead.value_or(runtime::SizeRange{0, 0});
  if (treeAhead)
    out.notes.push_back(
        fmt::format("the tree beat the ring by more than 5% at {}..{}: the ring "
                    "gives way to it there",
                    runtime::formatBytes(treeAhead->least), runtime::formatBytes(treeAhead->most)));
  // Recursive doubling against the rest (a sweep from before it existed has no rows of it).
  runtime::SizeRange& doublingRange =
      tcp.value_or(false) ? table.tcpDoublingRange : table.doublingRange;
  if (!sweep.outOfPlace.count("doubling")) {
    out.notes.push_back("the sweep has no rows of doubling: its range is kept");
  } else {
    const auto doublingAhead = clearWins(sweep, "doubling", {"oneshot", "ring", "tree"});
    doublingRange = doublingAhead.value_or(runtime::SizeRange{0, 0});
    if (doublingAhead)
      out.notes.push_back(fmt::format(
          "recursive doubling beat one-shot, the ring and the tree by more than 5% at {}..{}: it "
          "runs there",
          runtime::formatBytes(doublingAhead->least), runtime::formatBytes(doublingAhead->most)));
  }
  // The planner's direct algorithms run over shared memory only.
  if (tcp.value_or(false))
    out.notes.push_back("over TCP: the direct algorithms' keys are kept (they run over shm only)");
  else
    directRanges(sweep, results.nranks, table, out.notes);
  return out;
}

}  // namespace tutti::bench
