#include "runtime/tuning/tuning.hpp"

#include <fmt/format.h>

#include <iterator>

#include "base/config.hpp"
#include "base/error.hpp"

namespace tutti::runtime {
namespace {

constexpr double kLargestBytes = double(size_t{1} << 40);

// A key whose range is its TUTTI_* variable's, so that the file and the variable accept alike.
TuningKey likeVariable(const char* name, size_t Tuning::*field, const char* variable,
                       const char* unit, const char* doc) {
  const config::Var& var = config::find(variable);
  return {name, field, double(var.min), double(var.max), unit, doc};
}

}  // namespace

const std::vector<TuningKey>& tuningKeys() {
  static const std::vector<TuningKey> keys = {
      {"oneshot_max_bytes", &Tuning::oneShotMaxBytes, 0, kLargestBytes, "bytes",
       "largest all-reduce one-shot takes (every rank sends its whole buffer to every peer)"},
      {"tcp_oneshot_max_bytes", &Tuning::tcpOneShotMaxBytes, 0, kLargestBytes, "bytes",
       "the same for communicators whose ranks reach each other over TCP"},
      {"direct_min_bytes", &Tuning::directMinBytes, 0, kLargestBytes, "bytes",
       "smallest message the direct algorithms take (reading peers' buffers in place over shm)"},
      {"direct_pull_out_of_place", &Tuning::directPullOutOfPlace, 0, kLargestBytes, "bytes",
       "sizes where direct all-reduce of outputs read through the kernel beats the ring, out of "
       "place; elsewhere the ring runs"},
      {"direct_pull_in_place", &Tuning::directPullInPlace, 0, kLargestBytes, "bytes",
       "the same, in place (2 ranks only)"},
      {"tree_over_ring", &Tuning::treeOverRing, 0, kLargestBytes, "bytes",
       "sizes where the tree all-reduce beat the ring over shared memory in a sweep: the ring "
       "gives way there; elsewhere the cost model ranks them"},
      {"tcp_tree_over_ring", &Tuning::tcpTreeOverRing, 0, kLargestBytes, "bytes",
       "the same for communicators whose ranks reach each other over TCP"},
      {"doubling_range", &Tuning::doublingRange, 0, kLargestBytes, "bytes",
       "sizes where the recursive-doubling all-reduce beat every other algorithm over shared "
       "memory in a sweep: it runs there and nowhere else"},
      {"tcp_doubling_range", &Tuning::tcpDoublingRange, 0, kLargestBytes, "bytes",
       "the same for communicators whose ranks reach each other over TCP"},
      {"reduce_scatter_kernel_max_bytes", &Tuning::reduceScatterKernelMaxBytes, 0, kLargestBytes,
       "bytes", "largest direct reduce-scatter whose inputs are read through the kernel"},
      {"direct_staged_bytes", &Tuning::directStagedBytes, 4096, double(size_t{1} << 30), "bytes",
       "piece of a peer's data copied through the kernel, then reduced while in cache"},
      {"shm_step_us", &Tuning::shmStepUs, 0, 1e6, "us", "cost model: one step over shared memory"},
      {"tcp_step_us", &Tuning::tcpStepUs, 0, 1e6, "us", "cost model: one step over TCP"},
      {"shm_gbs", &Tuning::shmGBs, 1e-3, 1e5, "GB/s",
       "cost model and ring estimate: shared memory bandwidth per direction"},
      {"tcp_gbs", &Tuning::tcpGBs, 1e-3, 1e5, "GB/s",
       "cost model and ring estimate: TCP bandwidth per direction"},
      {"shm_streaming_min_bytes", &Tuning::shmStreamingMinBytes, 0, kLargestBytes, "bytes",
       "smallest collective over shared memory (by its whole buffer, as the planner counts) whose "
       "slots and results the FIFO algorithms write with streaming (non-temporal) stores, sparing "
       "the cache-line handoffs between cores; tune measures it on all-reduce"},
      likeVariable("slot_bytes", &Tuning::slotBytes, "TUTTI_CHUNK_BYTES", "bytes",
                   "bytes per FIFO slot (TUTTI_CHUNK_BYTES wins when set)"),
      likeVariable("slots", &Tuning::slots, "TUTTI_SLOTS", "count",
                   "slots per connection FIFO (TUTTI_SLOTS wins when set)"),
  };
  return keys;
}

namespace {

template <typename Field>
const TuningKey& keyHolding(Field field) {
  for (const TuningKey& key : tuningKeys())
    if (const auto* held = std::get_if<Field>(&key.field); held && *held == field) return key;
  raise(ErrorCode::kInternal, "a field of the tuning table has no key");
}

}  // namespace

const TuningKey& tuningKeyOf(size_t Tuning::*field) {
  return keyHolding(field);
}
const TuningKey& tuningKeyOf(double Tuning::*field) {
  return keyHolding(field);
}
const TuningKey& tuningKeyOf(SizeRange Tuning::*field) {
  return keyHolding(field);
}

int TuningTable::sectionFor(int ranks) const {
  const auto above = byRanks.upper_bound(ranks);
  return above == byRanks.begin() ? 0 : std::prev(above)->first;
}

const Tuning& TuningTable::forRanks(int ranks) const {
  const int section = sectionFor(ranks);
  return section == 0 ? any : byRanks.at(section);
}

std::string formatBytes(size_t bytes) {
  for (const auto& [shift, suffix] : {std::pair{30, "G"}, {20, "M"}, {10, "K"}})
    if (bytes != 0 && bytes % (size_t{1} << shift) == 0)
      return fmt::format("{}{}", bytes >> shift, suffix);
  return fmt::format("{}", bytes);
}

std::string formatTuningValue(const Tuning& tuning, const TuningKey& key) {
  const bool bytes = std::string_view(key.unit) == "bytes";
  if (const auto* size = std::get_if<size_t Tuning::*>(&key.field))
    return bytes ? formatBytes(tuning.*(*size)) : fmt::format("{}", tuning.*(*size));
  // The shortest text that reads back as the same double: ranks that take rank 0's table from
  // this text plan from rank 0's very numbers.
  if (const auto* real = std::get_if<double Tuning::*>(&key.field))
    return fmt::format("{}", tuning.*(*real));
  const SizeRange& range = tuning.*std::get<SizeRange Tuning::*>(key.field);
  return fmt::format("{}..{}", formatBytes(range.least), formatBytes(range.most));
}

}  // namespace tutti::runtime
