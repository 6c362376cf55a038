// TUTTI_AUTOTUNE's trial of one size (SizeTrial): the candidates run in turn, each warm-up call
// uncounted, the medians are each candidate's own times, the fastest of the agreed figures is
// chosen (the planner's pick, the first, unless another beats it by more than the margin), it runs
// for the calls between trials, and then a new trial starts. Times are random with a fixed seed;
// the reference is computed here, apart.
#include "runtime/collectives/autotune.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <vector>

#include "runtime/collectives/algorithm.hpp"

using namespace tutti::runtime;

namespace {

std::vector<const Algorithm*> allReduces() {
  std::vector<const Algorithm*> out;
  for (const Algorithm& algorithm : algorithms())
    if (algorithm.collective == Collective::kAllReduce) out.push_back(&algorithm);
  return out;
}

double medianOf(std::vector<double> times) {
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

TEST_CASE(
    "a trial runs each candidate in turn, counts all but the warm-ups, and keeps the fastest") {
  const std::vector<const Algorithm*> candidates = allReduces();
  REQUIRE(candidates.size() >= 4);
  const size_t k = candidates.size();
  const int perCandidate = SizeTrial::kWarmUps + SizeTrial::kSamples;
  CHECK(SizeTrial::longestCalls() == static_cast<int>(k) * perCandidate);

  std::mt19937 random(20261206);
  std::uniform_real_distribution<double> time(1.0, 100.0);
  SizeTrial trial(candidates);
  std::vector<std::vector<double>> counted(k);
  for (int call = 0; call < SizeTrial::longestCalls(); ++call) {
    const SizeTrial::Turn turn = trial.next();
    INFO("call " << call);
    REQUIRE(turn.trial);
    REQUIRE(turn.candidate == static_cast<size_t>(call) % k);
    REQUIRE(turn.algorithm == candidates[turn.candidate]);
    const int round = call / static_cast<int>(k);
    REQUIRE(turn.sample == (round < SizeTrial::kWarmUps ? -1 : round - SizeTrial::kWarmUps));
    // A warm-up's time is a hundred times the others': were it counted, its candidate would lose.
    const double us = turn.sample < 0 ? 10000.0 : time(random);
    if (turn.sample >= 0) counted[turn.candidate].push_back(us);
    REQUIRE(trial.finished(turn, us) == (call + 1 == SizeTrial::longestCalls()));
  }
  const std::vector<double> medians = trial.medians();
  REQUIRE(medians.size() == k);
  for (size_t c = 0; c < k; ++c) CHECK(medians[c] == medianOf(counted[c]));

  // The agreed figures decide, not this rank's: another rank was slowest with candidate 2.
  std::vector<double> agreed = medians;
  for (double& figure : agreed) figure += 1000;
  agreed[2] = 1.0;
  CHECK(&trial.choose(agreed) == candidates[2]);
  CHECK(trial.chosen() == candidates[2]);

  for (uint32_t call = 0; call < SizeTrial::kCallsBetweenTrials; ++call) {
    const SizeTrial::Turn turn = trial.next();
    REQUIRE_FALSE(turn.trial);
    REQUIRE(turn.algorithm == candidates[2]);
  }
  // Then a new trial, from the first candidate and its warm-up.
  const SizeTrial::Turn again = trial.next();
  CHECK(again.trial);
  CHECK(again.candidate == 0);
  CHECK(again.sample == -1);
  CHECK(trial.chosen() == nullptr);
}

TEST_CASE("the planner's pick stays unless another is faster by more than the margin") {
  const std::vector<const Algorithm*> candidates = allReduces();
  std::vector<double> agreed(candidates.size(), 500.0);
  agreed[0] = 100.0;
  agreed[3] = 100.0 * (1 - SizeTrial::kMargin) + 0.01;  // faster, within the margin
  CHECK(&SizeTrial(candidates).choose(agreed) == candidates[0]);
  agreed[3] = 100.0 * (1 - SizeTrial::kMargin) - 0.01;  // faster by more
  CHECK(&SizeTrial(candidates).choose(agreed) == candidates[3]);
  agreed[2] = agreed[3] / 2;  // the fastest, not the first past the margin
  CHECK(&SizeTrial(candidates).choose(agreed) == candidates[2]);
}
