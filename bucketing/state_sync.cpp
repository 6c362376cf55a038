// bucketing/state_sync.cpp: shape verification by allgather of a per-rank signature, and
// the coalesced broadcast.
//
// The signature is [count, then per tensor: dtype, ndim, dims...] as int64. Ranks first allgather
// its length, then the signatures padded to the longest, so every rank sees every rank's list and
// reports the same first mismatch.
#include "bucketing/state_sync.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <tuple>
#include <utility>

#include "tutti/tutti.hpp"

namespace tutti::bucketing {
namespace {

std::vector<int64_t> signature(const std::vector<TensorBuffer>& tensors) {
  std::vector<int64_t> out{static_cast<int64_t>(tensors.size())};
  for (const TensorBuffer& tensor : tensors) {
    out.push_back(tensor.dtype);
    out.push_back(static_cast<int64_t>(tensor.shape.size()));
    out.insert(out.end(), tensor.shape.begin(), tensor.shape.end());
  }
  return out;
}

struct Entry {
  int64_t dtype = -1;
  std::vector<int64_t> shape;
};

std::vector<Entry> parse(const int64_t* sig) {
  std::vector<Entry> entries(static_cast<size_t>(sig[0]));
  size_t at = 1;
  for (Entry& entry : entries) {
    entry.dtype = sig[at];
    const auto ndim = static_cast<size_t>(sig[at + 1]);
    entry.shape.assign(sig + at + 2, sig + at + 2 + ndim);
    at += 2 + ndim;
  }
  return entries;
}

std::string format(const Entry& entry) {
  std::string out = "[";
  for (size_t i = 0; i < entry.shape.size(); ++i)
    out += (i ? ", " : "") + std::to_string(entry.shape[i]);
  return out + "] " + tutti_type_name(static_cast<tuttiDataType_t>(entry.dtype));
}

void fail(const std::string& message) {
  throw CommError(tuttiInvalidUsage, "parameter verification: " + message);
}

}  // namespace

void verifyShapesAcrossRanks(tuttiComm_t comm, const std::vector<TensorBuffer>& tensors) {
  int nranks = 0;
  check(tutti_comm_size(comm, &nranks));
  const std::vector<int64_t> local = signature(tensors);
  const int64_t length = static_cast<int64_t>(local.size());
  std::vector<int64_t> lengths(static_cast<size_t>(nranks));
  check(tutti_allgather(&length, lengths.data(), 1, tuttiInt64, comm, nullptr));
  const auto longest = static_cast<size_t>(*std::max_element(lengths.begin(), lengths.end()));
  std::vector<int64_t> padded = local;
  padded.resize(longest, 0);
  std::vector<int64_t> all(longest * static_cast<size_t>(nranks));
  check(tutti_allgather(padded.data(), all.data(), longest, tuttiInt64, comm, nullptr));

  const std::vector<Entry> reference = parse(all.data());
  for (int rank = 1; rank < nranks; ++rank) {
    const std::vector<Entry> other = parse(all.data() + longest * static_cast<size_t>(rank));
    const size_t common = std::min(reference.size(), other.size());
    for (size_t i = 0; i < common; ++i) {
      if (other[i].dtype == reference[i].dtype && other[i].shape == reference[i].shape) continue;
      const std::string name = i < tensors.size() ? " ('" + tensors[i].name + "')" : "";
      fail("parameter " + std::to_string(i) + name + " is " + format(other[i]) + " on rank " +
           std::to_string(rank) + " but " + format(reference[i]) + " on rank 0");
    }
    if (other.size() != reference.size())
      fail("rank " + std::to_string(rank) + " has " + std::to_string(other.size()) +
           " parameters, rank 0 has " + std::to_string(reference.size()));
  }
}

void broadcastFromRank0(tuttiComm_t comm, const std::vector<TensorBuffer>& tensors,
                        size_t chunkBytes) {
  if (chunkBytes == 0) throw CommError(tuttiInvalidArgument, "broadcast: chunk size 0");
  int rank = 0;
  check(tutti_comm_rank(comm, &rank));
  size_t total = 0;
  for (const TensorBuffer& tensor : tensors) total += tensor.bytes();
  std::vector<unsigned char> chunk(std::min(chunkBytes, total));
  // (tensor, offset in it) where the next chunk starts, walked once to pack and once to unpack.
  size_t tensor = 0, offset = 0;
  for (size_t done = 0; done < total;) {
    const size_t size = std::min(chunkBytes, total - done);
    auto walk = [&](bool pack) {
      size_t t = tensor, o = offset;
      for (size_t at = 0; at < size;) {
        const size_t n = std::min(size - at, tensors[t].bytes() - o);
        auto* bytes = static_cast<unsigned char*>(tensors[t].data) + o;
        if (pack)
          std::memcpy(chunk.data() + at, bytes, n);
        else
          std::memcpy(bytes, chunk.data() + at, n);
        at += n;
        o += n;
        if (o == tensors[t].bytes()) ++t, o = 0;
      }
      return std::pair{t, o};
    };
    std::pair<size_t, size_t> next;
    if (rank == 0) next = walk(true);
    check(tutti_broadcast(chunk.data(), chunk.data(), size, tuttiUint8, 0, comm, nullptr));
    if (rank != 0) next = walk(false);
    std::tie(tensor, offset) = next;
    done += size;
  }
}

}  // namespace tutti::bucketing
