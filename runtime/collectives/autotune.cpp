#include "runtime/collectives/autotune.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "base/log.hpp"
#include "runtime/collectives/algorithm.hpp"

namespace tutti::runtime {
namespace {

// Every all-reduce of the table that can take `bytes` over these ranks: the planner's pick first.
// What the table's measured ranges prefer does not count (the trial measures instead); what an
// algorithm needs does: direct only over shared memory and from direct_min_bytes, below which
// its round of offers is all it adds.
std::vector<const Algorithm*> candidatesFor(size_t bytes, const Algorithm& planned,
                                            const GroupView& group) {
  std::vector<const Algorithm*> candidates = {&planned};
  const bool sharedMemory = group.connections.allShareMemory();
  for (const Algorithm& algorithm : algorithms()) {
    if (algorithm.collective != Collective::kAllReduce || &algorithm == &planned) continue;
    if (algorithm.sharedMemoryOnly && !sharedMemory) continue;
    if (algorithm.minBytes && bytes < group.settings.tuning.*algorithm.minBytes) continue;
    candidates.push_back(&algorithm);
  }
  return candidates;
}

}  // namespace

bool autotunes(AutotuneMode mode, int ranks) {
  switch (mode) {
    case AutotuneMode::kOn: return true;
    case AutotuneMode::kOff: return false;
    case AutotuneMode::kAuto: return ranks == 2;
  }
  return false;
}

SizeTrial::SizeTrial(std::vector<const Algorithm*> candidates)
    : candidates_(std::move(candidates)), samples_(candidates_.size() * kSamples) {}

int SizeTrial::longestCalls() {
  const auto allReduces =
      std::count_if(algorithms().begin(), algorithms().end(),
                    [](const auto& a) { return a.collective == Collective::kAllReduce; });
  return static_cast<int>(allReduces) * (kWarmUps + kSamples);
}

SizeTrial::Turn SizeTrial::next() {
  if (chosen_) {
    if (++call_ <= kCallsBetweenTrials) return {chosen_, false, 0, -1};
    chosen_ = nullptr;
    call_ = 0;
  }
  const size_t candidate = call_ % candidates_.size();
  const int round = static_cast<int>(call_ / candidates_.size());
  return {candidates_[candidate], true, candidate, round < kWarmUps ? -1 : round - kWarmUps};
}

bool SizeTrial::finished(const Turn& turn, double us) {
  if (turn.sample >= 0) samples_[turn.candidate * kSamples + static_cast<size_t>(turn.sample)] = us;
  return ++call_ == candidates_.size() * (kWarmUps + kSamples);
}

std::vector<double> SizeTrial::medians() const {
  std::vector<double> medians;
  for (size_t candidate = 0; candidate < candidates_.size(); ++candidate) {
    std::vector<double> times(
        samples_.begin() + static_cast<ptrdiff_t>(candidate * kSamples),
        samples_.begin() + static_cast<ptrdiff_t>((candidate + 1) * kSamples));
    std::nth_element(times.begin(), times.begin() + kSamples / 2, times.end());
    medians.push_back(times[kSamples / 2]);
  }
  return medians;
}

const Algorithm& SizeTrial::choose(const std::vector<double>& agreed) {
  const auto fastest = std::min_element(agreed.begin(), agreed.end()) - agreed.begin();
  const bool clearlyFaster = agreed[static_cast<size_t>(fastest)] < agreed[0] * (1 - kMargin);
  chosen_ = candidates_[clearlyFaster ? static_cast<size_t>(fastest) : 0];
  call_ = 0;
  return *chosen_;
}

Autotune::Turn Autotune::turn(Collective collective, size_t bytes, const GroupView& group) {
  const auto planned = [&]() -> const Algorithm& {
    return pickAlgorithm(collective, bytes, group);
  };
  if (collective != Collective::kAllReduce || group.settings.algorithm ||
      !autotunes(group.settings.autotune, group.size))
    return {&planned(), nullptr, {}};
  auto found = trials_.find(bytes);
  if (found == trials_.end()) {
    if (trials_.size() == kMaxSizes) return {&planned(), nullptr, {}};
    found = trials_.emplace(bytes, candidatesFor(bytes, planned(), group)).first;
  }
  SizeTrial& trial = found->second;
  const SizeTrial::Turn call = trial.next();
  return {call.algorithm, call.trial ? &trial : nullptr, call};
}

void Autotune::finish(const Turn& turn, std::chrono::steady_clock::time_point start,
                      OpContext& ctx) {
  const double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  if (!turn.trial->finished(turn.call, us)) return;
  std::vector<double> agreed = turn.trial->medians();
  // The slowest rank's time is the collective's: every rank ends the trial with the same figures.
  OpContext vote = ctx;
  vote.dtype = kernels::DataType::kFloat64;
  vote.op = kernels::RedOp::kMax;
  vote.carries = Carries::kData;
  allreduceOneShot(vote, {agreed.data(), agreed.data(), agreed.size(), 0});
  // As after every operation: a rank that returns and computes must not hold back what its
  // peers wait for (over tcp a vote can still be queued for a full socket).
  vote.drainSends();
  const Algorithm& chosen = turn.trial->choose(agreed);
  if (log::level() < log::Level::kInfo) return;
  std::string times;
  for (size_t i = 0; i < agreed.size(); ++i)
    times +=
        fmt::format("{}{} {:.1f}", i ? ", " : "", turn.trial->candidates()[i]->name, agreed[i]);
  log::info("rank {}: autotune: allreduce of {} bytes runs {} (median us, slowest rank: {})",
            ctx.group.rank, ctx.bytes, chosen.name, times);
}

}  // namespace tutti::runtime
