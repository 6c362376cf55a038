// Bucket assignment: PyTorch's own test cases (test_c10d_common.py, ComputeBucketAssignmentTest)
// and the 1 MiB / cap / overshoot / dtype rules.
#include "bucketing/bucket_assignment.hpp"

#include <catch2/catch.hpp>
#include <limits>

namespace tb = tutti::bucketing;
using Buckets = std::vector<std::vector<size_t>>;

namespace {

std::vector<tb::TensorSize> floats(const std::vector<size_t>& counts) {
  std::vector<tb::TensorSize> out;
  for (size_t count : counts) out.push_back({count * 4, tuttiFloat32});
  return out;
}

// PyTorch's alternating float (50 elements) / double (25 elements) list.
std::vector<tb::TensorSize> alternating() {
  std::vector<tb::TensorSize> out;
  for (int i = 0; i < 3; ++i) {
    out.push_back({50 * 4, tuttiFloat32});
    out.push_back({25 * 8, tuttiFloat64});
  }
  return out;
}

}  // namespace

TEST_CASE("assignment matches PyTorch's test cases", "[bucketing]") {
  CHECK(tb::computeBucketAssignmentBySize(floats({100, 200, 100, 50}), {400}) ==
        Buckets{{0}, {1}, {2}, {3}});
  CHECK(tb::computeBucketAssignmentBySize(alternating(), {400}) ==
        Buckets{{0, 2}, {1, 3}, {4}, {5}});
  CHECK(tb::computeBucketAssignmentBySize(floats({10, 10, 10, 10}), {40, 80}) ==
        Buckets{{0}, {1, 2}, {3}});
  CHECK(tb::computeBucketAssignmentBySize(alternating(), {200, 400}) ==
        Buckets{{0}, {1}, {2, 4}, {3, 5}});
}

TEST_CASE("first bucket closes at 1 MiB, the next ones at the cap", "[bucketing]") {
  const size_t quarter = (size_t{1} << 20) / 16;  // 256 KiB of float32
  const auto tensors = floats(std::vector<size_t>(12, quarter));
  const Buckets buckets =
      tb::computeBucketAssignmentBySize(tensors, {tb::kFirstBucketBytes, size_t{2} << 20});
  CHECK(buckets == Buckets{{0, 1, 2, 3}, {4, 5, 6, 7, 8, 9, 10, 11}});
}

TEST_CASE("a bucket closes once it reaches its limit, overshooting by one tensor", "[bucketing]") {
  // 600 + 600 bytes pass the 1000-byte limit: both stay in the first bucket.
  const std::vector<tb::TensorSize> tensors{
      {600, tuttiFloat32}, {600, tuttiFloat32}, {100, tuttiFloat32}, {2000, tuttiFloat32}};
  CHECK(tb::computeBucketAssignmentBySize(tensors, {1000, 2000}) == Buckets{{0, 1}, {2, 3}});
}

TEST_CASE("dtypes never share a bucket", "[bucketing]") {
  const Buckets buckets =
      tb::computeBucketAssignmentBySize(alternating(), {std::numeric_limits<size_t>::max()});
  CHECK(buckets == Buckets{{0, 2, 4}, {1, 3, 5}});
}

TEST_CASE("with a ready order, buckets follow it unsorted", "[bucketing]") {
  const Buckets buckets =
      tb::computeBucketAssignmentBySize(floats({10, 10, 10, 10}), {40, 80}, {3, 1, 0, 2});
  CHECK(buckets == Buckets{{3}, {1, 0}, {2}});
}

TEST_CASE("bad arguments are errors", "[bucketing]") {
  CHECK_THROWS(tb::computeBucketAssignmentBySize(floats({1}), {}));
  CHECK_THROWS(tb::computeBucketAssignmentBySize(floats({1}), {4}, {1}));
}
