// bucketing/bucket_assignment.cpp: greedy size-limited buckets, one open bucket per dtype.
#include "bucketing/bucket_assignment.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <stdexcept>

namespace tutti::bucketing {
namespace {

struct OpenBucket {
  std::vector<size_t> indices;
  size_t bytes = 0;
  size_t limitIndex = 0;  // which of sizeLimits this dtype's current bucket uses
};

}  // namespace

std::vector<std::vector<size_t>> computeBucketAssignmentBySize(
    const std::vector<TensorSize>& tensors, const std::vector<size_t>& sizeLimits,
    const std::vector<size_t>& order) {
  if (sizeLimits.empty()) throw std::invalid_argument("bucket assignment: no size limits");
  std::vector<size_t> visit = order;
  if (visit.empty()) {
    visit.resize(tensors.size());
    std::iota(visit.begin(), visit.end(), size_t{0});
  }
  std::vector<std::vector<size_t>> result;
  std::map<tuttiDataType_t, OpenBucket> open;
  for (size_t index : visit) {
    if (index >= tensors.size())
      throw std::invalid_argument("bucket assignment: tensor index " + std::to_string(index) +
                                  " out of range");
    OpenBucket& bucket = open[tensors[index].dtype];
    bucket.indices.push_back(index);
    bucket.bytes += tensors[index].bytes;
    if (bucket.bytes >= sizeLimits[bucket.limitIndex]) {
      result.push_back(std::move(bucket.indices));
      bucket.indices.clear();
      bucket.bytes = 0;
      bucket.limitIndex = std::min(bucket.limitIndex + 1, sizeLimits.size() - 1);
    }
  }
  for (auto& [dtype, bucket] : open)
    if (!bucket.indices.empty()) result.push_back(std::move(bucket.indices));
  if (order.empty())
    std::sort(result.begin(), result.end(), [](const auto& a, const auto& b) {
      return *std::min_element(a.begin(), a.end()) < *std::min_element(b.begin(), b.end());
    });
  return result;
}

}  // namespace tutti::bucketing
