#include "tools/tutti-validate/pairing.hpp"

#include <algorithm>

namespace tutti::validate {

std::vector<Round> roundRobin(int hosts) {
  // Circle method: slot 0 stays, the others turn one place per round; slot k meets slot m-1-k.
  // With an odd count a phantom slot makes it even, and whoever meets it rests.
  std::vector<Round> rounds;
  if (hosts < 2) return rounds;
  const int slots = hosts % 2 == 0 ? hosts : hosts + 1;
  for (int r = 0; r + 1 < slots; ++r) {
    Round round;
    auto at = [&](int slot) { return slot == 0 ? 0 : 1 + (slot - 1 + r) % (slots - 1); };
    for (int k = 0; k < slots / 2; ++k) {
      const int a = at(k), b = at(slots - 1 - k);
      if (a < hosts && b < hosts) round.emplace_back(std::min(a, b), std::max(a, b));
    }
    rounds.push_back(std::move(round));
  }
  return rounds;
}

int partnerIn(const Round& round, int host) {
  for (const auto& [a, b] : round) {
    if (a == host) return b;
    if (b == host) return a;
  }
  return -1;
}

std::vector<Round> packRounds(const std::vector<Pair>& pairs) {
  std::vector<Round> rounds;
  for (const Pair& pair : pairs) {
    auto fits = [&](const Round& round) {
      return partnerIn(round, pair.first) < 0 && partnerIn(round, pair.second) < 0;
    };
    auto round = std::find_if(rounds.begin(), rounds.end(), fits);
    if (round == rounds.end()) round = rounds.insert(rounds.end(), Round{});
    round->push_back(pair);
  }
  return rounds;
}

}  // namespace tutti::validate
