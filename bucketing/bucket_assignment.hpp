// bucketing/bucket_assignment.hpp: which gradients share a bucket, as PyTorch's
// compute_bucket_assignment_by_size (torch/csrc/distributed/c10d/reducer.cpp) decides it.
#pragma once

#include <cstddef>
#include <vector>

#include "tutti/tutti.h"

namespace tutti::bucketing {

struct TensorSize {
  size_t bytes;
  tuttiDataType_t dtype;
};

inline constexpr size_t kFirstBucketBytes = size_t{1} << 20;
inline constexpr size_t kDefaultBucketCapBytes = size_t{25} << 20;

// Walks the tensors in `order` (declaration order when empty) and fills one open bucket per dtype.
// A bucket closes once its size reaches its limit (so it may overshoot by one tensor); each dtype
// uses sizeLimits[0] for its first bucket, sizeLimits[1] for its second and so on, the last limit
// repeating. With an empty `order` the buckets are sorted by the smallest index they hold;
// otherwise they stay in the order they closed (the ready order's). Tensor indices keep the order
// they were visited in within a bucket.
std::vector<std::vector<size_t>> computeBucketAssignmentBySize(
    const std::vector<TensorSize>& tensors, const std::vector<size_t>& sizeLimits,
    const std::vector<size_t>& order = {});

}  // namespace tutti::bucketing

namespace tutti::bucketing {

// Collective: every rank returns rank 0's assignment of numTensors tensors (a broadcast of
// [buckets, their lengths, the indices]). Throws unless it covers each tensor exactly once.
std::vector<std::vector<size_t>> broadcastAssignment(
    tuttiComm_t comm, const std::vector<std::vector<size_t>>& assignment, size_t numTensors);

}  // namespace tutti::bucketing
