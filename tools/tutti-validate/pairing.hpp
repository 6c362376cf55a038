// The rounds in which every pair of n hosts meets once: n-1 rounds (n even) or n rounds (n odd,
// one host resting each round) of disjoint pairs, by the circle method, so that all pairs of a
// round run at once and load the fabric as training does.
#pragma once

#include <utility>
#include <vector>

namespace tutti::validate {

using Pair = std::pair<int, int>;  // first < second
using Round = std::vector<Pair>;

std::vector<Round> roundRobin(int hosts);
// The host `host` meets in `round`, or -1 when it rests.
int partnerIn(const Round& round, int host);
// `pairs` packed greedily, in order, into rounds of disjoint pairs.
std::vector<Round> packRounds(const std::vector<Pair>& pairs);

}  // namespace tutti::validate
