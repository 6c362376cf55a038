// bucketing/state_sync.hpp: what DDP does before the first iteration — check that every
// rank holds the same parameters, then give every rank rank 0's values.
#pragma once

#include <cstddef>
#include <vector>

#include "bucketing/tensor.hpp"
#include "tutti/tutti.h"

namespace tutti::bucketing {

inline constexpr size_t kBroadcastChunkBytes = size_t{250} << 20;

// Collective. Throws tutti::CommError (tuttiInvalidUsage) on every rank when any rank's list
// differs from rank 0's in length, dtype or shape; the message names the first mismatch.
void verifyShapesAcrossRanks(tuttiComm_t comm, const std::vector<TensorBuffer>& tensors);

// Collective. Overwrites every rank's tensors with rank 0's, packed back to back into broadcasts
// of at most chunkBytes each (a tensor may straddle two chunks).
void broadcastFromRank0(tuttiComm_t comm, const std::vector<TensorBuffer>& tensors,
                        size_t chunkBytes = kBroadcastChunkBytes);

}  // namespace tutti::bucketing
