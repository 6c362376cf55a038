// `tutti-info postmortem`: merges one job's flight-recorder dumps and explains the hang or the
// failure: which rank is behind and on which operation, who waits for whom, and calls whose
// signatures differ at the same sequence number.
#pragma once

#include <string>
#include <vector>

#include "tools/tutti-info/dumps.hpp"

namespace tutti::info {

// Throws InputError for dumps of more than one job or dumps that contradict each other (two of
// one rank, sizes that differ).
std::string postmortem(const std::vector<RankDump>& dumps);

}  // namespace tutti::info
