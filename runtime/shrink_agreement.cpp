#include "runtime/shrink_agreement.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <sstream>

#include "base/error.hpp"
#include "runtime/topology_plan.hpp"

namespace tutti::runtime {
namespace {

using namespace std::chrono_literals;

// How long one wait for a proposal lasts before the others, the decision and the dead are looked
// at again.
constexpr auto kSlice = 50ms;
// How long the store may take to say whether the decision is posted: a round trip, asked also
// when the round's own deadline has passed (so that a decision posted in time is not missed).
constexpr auto kStoreAnswer = 1s;

// Ranks written by formatRanks, from a peer: anything malformed or out of range is refused.
std::vector<int> parseRanks(const std::string& text, int size, const std::string& what) {
  std::istringstream in(text);
  std::vector<int> ranks;
  int rank = 0;
  while (in >> rank) {
    if (rank < 0 || rank >= size)
      raise(ErrorCode::kRemote, "{} names rank {}, out of range for {} ranks", what, rank, size);
    ranks.push_back(rank);
  }
  if (!in.eof()) raise(ErrorCode::kRemote, "{} is malformed: '{}'", what, text);
  return ranks;
}

std::vector<int> markedRanks(const std::vector<bool>& marked) {
  std::vector<int> ranks;
  for (size_t rank = 0; rank < marked.size(); ++rank)
    if (marked[rank]) ranks.push_back(static_cast<int>(rank));
  return ranks;
}

std::string joinedRanks(const std::vector<bool>& marked) {
  return formatRanks(markedRanks(marked));
}

class Round {
 public:
  Round(const ShrinkRound& round, const Deadline& deadline)
      : round_(round),
        deadline_(deadline),
        excluded_(static_cast<size_t>(round.size)),
        heard_(static_cast<size_t>(round.size)) {
    heard_[static_cast<size_t>(round.rank)] = true;
  }

  void propose(const std::vector<int>& proposal) {
    round_.store.set(proposalKey(round_.rank), formatRanks(proposal), deadline_);
    exclude(proposal);
  }

  // Until the decision is taken (by anyone) or every rank not excluded was heard: then the union.
  ShrinkDecision run() {
    for (;;) {
      if (round_.findGone) exclude(round_.findGone());
      if (auto taken = decisionIfPosted()) return *taken;
      hearFromThoseWhoPosted();
      const int awaited = firstUnheard();
      if (awaited < 0) return decide();
      if (deadline_.expired()) raiseMissing();
      hearFrom(awaited, sliceOfDeadline());
    }
  }

 private:
  std::string key(const std::string& name) const { return round_.prefix + "/" + name; }
  std::string proposalKey(int rank) const { return key("proposal/" + std::to_string(rank)); }

  void exclude(const std::vector<int>& ranks) {
    for (int rank : ranks) excluded_[static_cast<size_t>(rank)] = true;
  }

  int firstUnheard() const {
    for (int rank = 0; rank < round_.size; ++rank)
      if (!excluded_[static_cast<size_t>(rank)] && !heard_[static_cast<size_t>(rank)]) return rank;
    return -1;
  }

  // Every awaited proposal already posted, so that a timeout names only the ranks that never
  // called.
  void hearFromThoseWhoPosted() {
    for (int rank = 0; rank < round_.size; ++rank)
      if (!excluded_[static_cast<size_t>(rank)] && !heard_[static_cast<size_t>(rank)] &&
          round_.store.check(proposalKey(rank), Deadline::after(kStoreAnswer)))
        hearFrom(rank, Deadline::after(kStoreAnswer));
  }

  void hearFrom(int rank, const Deadline& wait) {
    try {
      const std::string text = round_.store.get(proposalKey(rank), wait);
      heard_[static_cast<size_t>(rank)] = true;
      exclude(parseRanks(text, round_.size, fmt::format("rank {}'s shrink proposal", rank)));
    } catch (const Error& error) {
      if (error.code() != ErrorCode::kTimeout) throw;
    }
  }

  [[noreturn]] void raiseMissing() const {
    std::vector<bool> missing(excluded_.size());
    for (size_t rank = 0; rank < missing.size(); ++rank)
      missing[rank] = !excluded_[rank] && !heard_[rank];
    raise(ErrorCode::kTimeout,
          "rank {}: shrink timed out: ranks {} neither called tutti_comm_shrink nor were excluded "
          "by a rank that did (every surviving rank must call it; excluded so far: {})",
          round_.rank, joinedRanks(missing), describeExcluded());
  }

  std::string describeExcluded() const {
    const std::string ranks = joinedRanks(excluded_);
    return ranks.empty() ? "none" : ranks;
  }

  Deadline sliceOfDeadline() const {
    return deadline_.remainingMs() > kSlice.count() ? Deadline::after(kSlice) : deadline_;
  }

  // The decision, when some rank posted it already.
  std::optional<ShrinkDecision> decisionIfPosted() {
    const Deadline answer = Deadline::after(kStoreAnswer);
    if (!round_.store.check(key("decision"), answer)) return std::nullopt;
    return readDecision(answer);
  }

  ShrinkDecision readDecision(const Deadline& deadline) {
    const std::string text = round_.store.get(key("decision"), deadline);
    const size_t split = text.find(';');
    ShrinkDecision decision;
    std::istringstream decider(text.substr(0, split));
    if (split == std::string::npos || !(decider >> decision.decidedBy) || decision.decidedBy < 0 ||
        decision.decidedBy >= round_.size)
      raise(ErrorCode::kRemote, "rank {}: the shrink decision is malformed: '{}'", round_.rank,
            text);
    decision.excluded = parseRanks(text.substr(split + 1), round_.size, "the shrink decision");
    return decision;
  }

  // The round's deadline, or a store's answer from now when that is later: a decision taken in
  // time is posted and read even at the deadline's edge.
  Deadline deadlineForStore() const {
    return deadline_.remainingMs() > std::chrono::milliseconds(kStoreAnswer).count()
               ? deadline_
               : Deadline::after(kStoreAnswer);
  }

  // The first to claim it posts its union; a later claimer takes the posted one.
  ShrinkDecision decide() {
    if (round_.store.add(key("decider"), 1) != 1) {
      try {
        return readDecision(deadlineForStore());
      } catch (const Error& error) {
        if (error.code() != ErrorCode::kTimeout) throw;
        raise(ErrorCode::kTimeout,
              "rank {}: shrink timed out: another rank claimed the decision and never posted it "
              "(it died during the shrink?): {}",
              round_.rank, error.what());
      }
    }
    ShrinkDecision decision{markedRanks(excluded_), round_.rank};
    round_.store.set(key("decision"),
                     std::to_string(round_.rank) + ";" + formatRanks(decision.excluded),
                     deadlineForStore());
    return decision;
  }

  const ShrinkRound& round_;
  Deadline deadline_;
  std::vector<bool> excluded_;
  std::vector<bool> heard_;
};

}  // namespace

ShrinkDecision agreeOnExcluded(const ShrinkRound& round, const std::vector<int>& proposal,
                               const Deadline& deadline) {
  Round agreeing(round, deadline);
  agreeing.propose(proposal);
  return agreeing.run();
}

std::vector<int> checkedExclusions(int rank, int size, const int* ranks, int count) {
  if (count < 0 || count > size)
    raise(ErrorCode::kInvalidArgument,
          "rank {}: exclude_count {} is out of range [0, {}] (the communicator's size)", rank,
          count, size);
  if (count > 0 && !ranks)
    raise(ErrorCode::kInvalidArgument, "rank {}: exclude_ranks is NULL with exclude_count {}", rank,
          count);
  std::vector<int> sorted(ranks, ranks + count);
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] < 0 || sorted[i] >= size)
      raise(ErrorCode::kInvalidArgument,
            "rank {}: exclude_ranks names rank {}, out of range [0, {})", rank, sorted[i], size);
    if (i > 0 && sorted[i] == sorted[i - 1])
      raise(ErrorCode::kInvalidArgument, "rank {}: exclude_ranks names rank {} twice", rank,
            sorted[i]);
  }
  if (count == size)
    raise(ErrorCode::kInvalidArgument,
          "rank {}: exclude_ranks names all {} ranks: nobody would be left", rank, size);
  if (std::binary_search(sorted.begin(), sorted.end(), rank))
    raise(ErrorCode::kInvalidArgument,
          "rank {}: exclude_ranks names this rank itself (an excluded rank does not call "
          "tutti_comm_shrink; it destroys the communicator)",
          rank);
  return sorted;
}

}  // namespace tutti::runtime
