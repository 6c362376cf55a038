// TUTTI_AUTOTUNE: auto measures the all-reduce algorithms where it runs, instead of trusting the
// tuning table alone. A table is measured once (tutti-bench tune), but on a VM the fastest
// algorithm moves while the job runs: on a 2-core AMD EPYC the ring ran 256K-4M 25% ahead of
// one-shot at one minute and 1.5-2x behind it the next, on the same table (docs/tuning.md,
// "Measured while it runs"). So each size a communicator all-reduces runs every algorithm that can
// take it in turn (the planner's pick first), times them, and the ranks agree on the fastest
// (the slowest rank's median decides, with a small all-reduce of the medians: every rank then
// picks the same; the planner's pick stays unless another beats it by kMargin), which then runs
// until the next trial. Intel MPI's autotuner (I_MPI_TUNING_MODE=auto) works alike. The calls of
// a size come in the same order on every rank, so every rank runs the same algorithm at each call
// without saying so.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "runtime/settings.hpp"

namespace tutti::runtime {

struct Algorithm;
struct GroupView;
class OpContext;
enum class Collective;

// One size's trial: which candidate each call runs, and which was fastest. Pure bookkeeping,
// apart from the agreement (Autotune::finish), so that its schedule can be tested alone.
class SizeTrial {
 public:
  // Calls each candidate runs before its times count (a first call may set up what later ones
  // reuse), calls whose times count, and the calls the chosen algorithm runs before the next
  // trial (the machine may have moved).
  static constexpr int kWarmUps = 1;
  static constexpr int kSamples = 5;
  static constexpr uint32_t kCallsBetweenTrials = 1000;
  // How much faster than the planner's pick another candidate must be to replace it. A trial's
  // five calls are noisy on a busy VM, and between near-equals a noisy pick (2 ranks over TCP,
  // 2-32K: 1.07-3.2x behind the best in one run) costs more than keeping the table's, which costs
  // less than this margin where the trial is right.
  static constexpr double kMargin = 0.05;

  explicit SizeTrial(std::vector<const Algorithm*> candidates);
  // The calls of the longest trial, where every all-reduce of the table is a candidate: what a
  // benchmark runs untimed first to time what auto settles on (tutti-bench).
  static int longestCalls();

  struct Turn {
    const Algorithm* algorithm;
    bool trial;  // a call of the trial: finished() wants its time
    size_t candidate;
    int sample;  // its index among the candidate's counted times; -1 for a warm-up
  };
  // The algorithm of the next call: the candidates in turn (one call each, then again), so that
  // a machine drifting during the trial slows every candidate alike; then the chosen one.
  Turn next();
  // The trial's call `turn` took `us` on this rank; true when it was the trial's last.
  bool finished(const Turn& turn, double us);
  // Each candidate's median time on this rank, in the candidates' order.
  std::vector<double> medians() const;
  // Ends the trial with the fastest of `agreed` (the medians every rank agreed on, in the
  // candidates' order), unless the first candidate, the planner's pick, is within kMargin of it.
  const Algorithm& choose(const std::vector<double>& agreed);

  const std::vector<const Algorithm*>& candidates() const { return candidates_; }
  const Algorithm* chosen() const { return chosen_; }

 private:
  std::vector<const Algorithm*> candidates_;
  std::vector<double> samples_;  // kSamples per candidate, microseconds
  uint32_t call_ = 0;            // within the trial, or since the choice
  const Algorithm* chosen_ = nullptr;
};

// Whether TUTTI_AUTOTUNE=`mode` times the all-reduces of a communicator of `ranks` ranks.
bool autotunes(AutotuneMode mode, int ranks);

// A communicator's trials, one per all-reduce size, run on its engine one operation at a time.
// Not one per placement: a rank may call in place where its peers do not, and every rank must
// count the same calls.
class Autotune {
 public:
  // Sizes measured at most: a job whose sizes keep changing stops paying for trials past these.
  static constexpr size_t kMaxSizes = 64;

  struct Turn {
    const Algorithm* algorithm;
    SizeTrial* trial;  // nullptr where nothing is measured
    SizeTrial::Turn call;
  };
  // What a `collective` of `bytes` runs: the planner's pick (pickAlgorithm) but for all-reduces
  // that TUTTI_AUTOTUNE measures (and TUTTI_ALGO leaves to auto), whose sizes consult the planner
  // once, for the trial's first candidate.
  Turn turn(Collective collective, size_t bytes, const GroupView& group);
  // After a trial's call of `turn` ran (on `ctx`, from `start` until now): records its time, and
  // at the trial's last call agrees with the other ranks on the fastest (a small all-reduce on
  // ctx).
  static void finish(const Turn& turn, std::chrono::steady_clock::time_point start, OpContext& ctx);

 private:
  std::map<size_t, SizeTrial> trials_;
};

}  // namespace tutti::runtime
