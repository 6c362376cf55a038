// bucketing/assignment_broadcast.cpp: rank 0's bucket assignment, sent to every rank so
// that all of them reduce the same buckets in the same order after a rebuild.
//
// Wire format, int64: [number of buckets, length of each bucket, indices bucket by bucket], padded
// to 1 + 2 * numTensors (the most it can take: every bucket holds at least one tensor).
#include <cstdint>
#include <string>

#include "bucketing/bucket_assignment.hpp"
#include "tutti/tutti.hpp"

namespace tutti::bucketing {
namespace {

std::vector<int64_t> encode(const std::vector<std::vector<size_t>>& assignment, size_t length) {
  std::vector<int64_t> out{static_cast<int64_t>(assignment.size())};
  for (const auto& bucket : assignment) out.push_back(static_cast<int64_t>(bucket.size()));
  for (const auto& bucket : assignment) out.insert(out.end(), bucket.begin(), bucket.end());
  out.resize(length, 0);
  return out;
}

void invalid(const std::string& why) {
  throw CommError(tuttiInternalError, "bucket assignment from rank 0: " + why);
}

std::vector<std::vector<size_t>> decode(const std::vector<int64_t>& in, size_t numTensors) {
  const auto buckets = static_cast<size_t>(in[0]);
  if (buckets > numTensors) invalid(std::to_string(buckets) + " buckets");
  std::vector<std::vector<size_t>> out(buckets);
  std::vector<bool> seen(numTensors, false);
  size_t at = 1 + buckets;
  for (size_t b = 0; b < buckets; ++b) {
    const auto length = static_cast<size_t>(in[1 + b]);
    if (length == 0 || at + length > in.size()) invalid("bucket " + std::to_string(b) + " size");
    for (size_t i = 0; i < length; ++i, ++at) {
      const auto index = static_cast<size_t>(in[at]);
      if (index >= numTensors || seen[index]) invalid("tensor " + std::to_string(index));
      seen[index] = true;
      out[b].push_back(index);
    }
  }
  if (at - 1 - buckets != numTensors) invalid("not every tensor is in a bucket");
  return out;
}

}  // namespace

std::vector<std::vector<size_t>> broadcastAssignment(
    tuttiComm_t comm, const std::vector<std::vector<size_t>>& assignment, size_t numTensors) {
  std::vector<int64_t> wire = encode(assignment, 1 + 2 * numTensors);
  check(tutti_broadcast(wire.data(), wire.data(), wire.size(), tuttiInt64, 0, comm, nullptr));
  return decode(wire, numTensors);
}

}  // namespace tutti::bucketing
