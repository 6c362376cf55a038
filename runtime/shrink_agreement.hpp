// How the survivors of a communicator agree on who is gone before they shrink it
// (tutti_comm_shrink). The round runs over the bootstrap store, not over the data transports,
// which may be what broke:
//   1. every caller posts its proposal (the ranks it excludes) under prefix/proposal/RANK;
//   2. each waits for the proposal of every rank that no proposal read so far excludes (and,
//      with `findGone`, that it does not find gone itself, asked again every round);
//   3. the first to hear from all of those claims the decision (an add on prefix/decider) and
//      posts the union it saw; everyone else adopts that one.
// So a rank that saw a death and one that did not reach the same answer: the union. A rank that
// neither proposes nor is excluded by anyone holds the round until the deadline, which then names
// it: a shrink must be called by every surviving rank.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/deadline.hpp"
#include "runtime/bootstrap/bootstrap.hpp"

namespace tutti::runtime {

struct ShrinkDecision {
  std::vector<int> excluded;  // ascending
  int decidedBy = -1;
};

struct ShrinkRound {
  bootstrap::Store& store;
  std::string prefix;  // fresh per round
  int rank;
  int size;
  // The ranks this rank finds gone now (null: only the proposals count).
  std::function<std::vector<int>()> findGone;
};

ShrinkDecision agreeOnExcluded(const ShrinkRound& round, const std::vector<int>& proposal,
                               const Deadline& deadline);

// exclude_ranks as a caller gave them, checked (kInvalidArgument naming what is wrong: a NULL
// list with a count, a count out of range, a rank out of range, a duplicate, this rank, every
// rank) and sorted.
std::vector<int> checkedExclusions(int rank, int size, const int* ranks, int count);

}  // namespace tutti::runtime
