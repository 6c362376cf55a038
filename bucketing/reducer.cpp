// bucketing/reducer.cpp: the iteration state machine (see reducer.hpp).
//
// Each bucket counts the gradients it still waits for. markReady copies a gradient in and
// decrements its bucket; buckets launch strictly in index order (a complete bucket waits for the
// ones before it), so every rank issues the same collectives in the same order. With
// findUnusedParameters the map of locally used parameters is summed right after the last bucket.
// With gradientAsBucketView a bucket's memory is the gradients' own: markReady scales in place,
// and a locally unused gradient is kept aside while its slot contributes zeros.
#include "bucketing/reducer.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <string>

#include "tutti/tutti.hpp"

namespace tutti::bucketing {
namespace {

using Clock = std::chrono::steady_clock;

double msBetween(Clock::time_point from, Clock::time_point to) {
  return std::max(0.0, std::chrono::duration<double, std::milli>(to - from).count());
}

[[noreturn]] void usage(const std::string& message) {
  throw CommError(tuttiInvalidUsage, "reducer: " + message);
}

template <typename T>
void copyScaled(void* dst, const void* src, size_t count, int divisor) {
  auto* out = static_cast<T*>(dst);
  const auto* in = static_cast<const T*>(src);
  for (size_t i = 0; i < count; ++i) out[i] = in[i] / static_cast<T>(divisor);
}

void copyScaled(tuttiDataType_t dtype, void* dst, const void* src, size_t count, int divisor) {
  if (dtype == tuttiFloat64)
    copyScaled<double>(dst, src, count, divisor);
  else
    copyScaled<float>(dst, src, count, divisor);
}

// Zeroed. Registered memory (tutti_mem_alloc), so that a job on one host all-reduces the bucket in
// place, reading the peers' buckets (the direct algorithm); heap memory where the system gives
// none, which the all-reduce copies through its FIFOs instead.
std::shared_ptr<unsigned char[]> bucketMemory(size_t bytes) {
  void* memory = nullptr;
  if (bytes > 0 && tutti_mem_alloc(&memory, bytes) == tuttiSuccess)
    return {static_cast<unsigned char*>(memory), [](unsigned char* p) { tutti_mem_free(p); }};
  return std::shared_ptr<unsigned char[]>(new unsigned char[bytes]());
}

}  // namespace

struct Reducer::Bucket {
  tuttiDataType_t dtype = tuttiFloat32;
  std::vector<size_t> params;
  // Shared with the views handed out (gradientView); page-aligned (or operator new[]'s
  // alignment), which suits float64.
  std::shared_ptr<unsigned char[]> data;
  size_t bytes = 0;
  size_t pending = 0;
  std::unique_ptr<PendingReduction> work;
};

struct Reducer::State {
  struct Slot {
    size_t bucket = 0;
    size_t offset = 0;  // bytes into the bucket
  };

  tuttiComm_t comm = nullptr;
  int worldSize = 1;
  std::vector<TensorBuffer> grads;
  ReducerOptions options;
  std::unique_ptr<CommHook> hook;
  std::vector<Bucket> buckets;
  std::vector<Slot> slots;

  bool syncEnabled = true;
  bool inIteration = false;
  int64_t iteration = 0;  // synchronised iterations started
  std::vector<bool> marked;
  size_t nextBucket = 0;  // the next bucket to launch
  std::vector<int32_t> used;
  Request usedRequest;
  // gradientAsBucketView: the gradients of locally unused parameters, put back if no rank used
  // them (their slots are zeroed to contribute nothing).
  std::vector<std::vector<unsigned char>> setAside;
  std::vector<size_t> lastUnused;  // unused on every rank in the last finalized iteration

  bool rebuilt = false;
  bool rebuildPending = false;
  std::vector<size_t> readyOrder;  // recorded during the first synchronised iteration

  Clock::time_point start, lastReady, firstLaunch;
  IterationStats stats;

  std::vector<TensorSize> sizes() const {
    std::vector<TensorSize> out;
    for (const TensorBuffer& grad : grads) out.push_back({grad.bytes(), grad.dtype});
    return out;
  }
  std::string name(size_t param) const { return describe(grads, param); }
  bool recording() const { return !rebuilt && !options.findUnusedParameters; }
  bool inBuckets() const { return options.gradientAsBucketView; }

  void build(const std::vector<std::vector<size_t>>& assignment) {
    buckets.clear();
    buckets.resize(assignment.size());
    slots.assign(grads.size(), Slot{});
    for (size_t b = 0; b < assignment.size(); ++b) {
      Bucket& bucket = buckets[b];
      bucket.params = assignment[b];
      bucket.dtype = grads[bucket.params.front()].dtype;
      size_t bytes = 0;
      for (size_t param : bucket.params) {
        slots[param] = Slot{b, bytes};
        bytes += grads[param].bytes();
      }
      bucket.data = bucketMemory(bytes);
      bucket.bytes = bytes;
    }
  }

  std::shared_ptr<void> view(size_t param) const {
    const Bucket& bucket = buckets[slots[param].bucket];
    return {bucket.data, bucket.data.get() + slots[param].offset};
  }
  unsigned char* slotData(size_t param) {
    return buckets[slots[param].bucket].data.get() + slots[param].offset;
  }

  std::string unmarkedParams() const {
    std::string list;
    for (size_t i = 0; i < grads.size(); ++i)
      if (!marked[i]) list += (list.empty() ? "" : ", ") + name(i);
    return list;
  }
};

Reducer::Reducer(tuttiComm_t comm, std::vector<TensorBuffer> gradients, ReducerOptions options)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.comm = comm;
  check(tutti_comm_size(comm, &s.worldSize));
  s.grads = std::move(gradients);
  s.options = options;
  if (s.grads.empty()) usage("no parameters");
  if (options.bucketCapBytes == 0 || options.firstBucketBytes == 0)
    usage("bucket size limits must be positive");
  for (size_t i = 0; i < s.grads.size(); ++i) {
    const TensorBuffer& grad = s.grads[i];
    if (grad.dtype != tuttiFloat32 && grad.dtype != tuttiFloat64)
      throw CommError(tuttiInvalidArgument, "reducer: parameter " + s.name(i) + " has dtype " +
                                                tutti_type_name(grad.dtype) +
                                                "; gradients must be float32 or float64");
    if (grad.data == nullptr && grad.numel() > 0 && !s.inBuckets())
      throw CommError(tuttiInvalidArgument, "reducer: parameter " + s.name(i) + " has no buffer");
  }
  std::vector<size_t> limits{options.firstBucketBytes, options.bucketCapBytes};
  if (options.singleBucketFirstIteration && !options.findUnusedParameters)
    limits = {std::numeric_limits<size_t>::max()};
  std::vector<std::vector<size_t>> assignment = computeBucketAssignmentBySize(s.sizes(), limits);
  std::reverse(assignment.begin(), assignment.end());
  s.build(assignment);
  s.marked.assign(s.grads.size(), false);
}

Reducer::~Reducer() = default;  // each pending reduction waits for itself

void Reducer::setCommHook(std::unique_ptr<CommHook> hook) {
  std::lock_guard lock(mutex_);
  if (state_->iteration > 0 || state_->inIteration)
    usage("setCommHook must come before the first iteration");
  state_->hook = std::move(hook);
}

void Reducer::setSyncEnabled(bool enabled) {
  std::lock_guard lock(mutex_);
  if (state_->inIteration) usage("setSyncEnabled during an iteration");
  state_->syncEnabled = enabled;
}

bool Reducer::syncEnabled() const {
  std::lock_guard lock(mutex_);
  return state_->syncEnabled;
}

void Reducer::prepareForBackward(const std::vector<size_t>& unusedLocally) {
  std::lock_guard lock(mutex_);
  State& s = *state_;
  if (!s.syncEnabled) return;
  if (s.inIteration) {
    const std::string missing = s.unmarkedParams();
    usage("iteration " + std::to_string(s.iteration) + " did not finish its reduction" +
          (missing.empty() ? ": finalize() was not called"
                           : ": parameters never marked ready: " + missing +
                                 " (if unused, set findUnusedParameters and pass them to "
                                 "prepareForBackward)"));
  }
  if (!unusedLocally.empty() && !s.options.findUnusedParameters)
    usage("unused parameters given but findUnusedParameters is off");
  std::vector<bool> unused(s.grads.size(), false);
  for (size_t param : unusedLocally) {
    if (param >= s.grads.size()) usage("unused parameter " + std::to_string(param) + " unknown");
    if (unused[param]) usage("parameter " + s.name(param) + " given twice as unused");
    unused[param] = true;
  }
  if (s.rebuildPending) rebuildBuckets();
  s.inIteration = true;
  ++s.iteration;
  s.start = s.lastReady = s.firstLaunch = Clock::now();
  s.stats = IterationStats{};
  s.stats.iteration = s.iteration;
  s.marked.assign(s.grads.size(), false);
  s.used.assign(s.grads.size(), 0);
  s.setAside.assign(s.inBuckets() ? s.grads.size() : 0, {});
  s.nextBucket = 0;
  for (Bucket& bucket : s.buckets) bucket.pending = bucket.params.size();
  for (size_t param : unusedLocally) {
    s.marked[param] = true;
    unsigned char* slot = s.slotData(param);
    if (s.inBuckets()) s.setAside[param].assign(slot, slot + s.grads[param].bytes());
    std::memset(slot, 0, s.grads[param].bytes());
    --s.buckets[s.slots[param].bucket].pending;
  }
  launchReadyBuckets();
}

void Reducer::markReady(size_t param) {
  std::lock_guard lock(mutex_);
  State& s = *state_;
  if (!s.syncEnabled) return;
  if (param >= s.grads.size()) usage("markReady: no parameter " + std::to_string(param));
  if (!s.inIteration)
    usage("markReady(" + s.name(param) + ") outside an iteration: call prepareForBackward");
  if (s.marked[param])
    usage("parameter " + s.name(param) + " was marked ready twice in iteration " +
          std::to_string(s.iteration) + " (or marked although declared unused)");
  s.marked[param] = true;
  s.used[param] = 1;
  const TensorBuffer& grad = s.grads[param];
  const int divisor = s.hook ? 1 : s.worldSize;
  void* slot = s.slotData(param);
  const void* source = s.inBuckets() ? slot : grad.data;
  if (source != slot || divisor != 1) copyScaled(grad.dtype, slot, source, grad.numel(), divisor);
  if (s.recording()) s.readyOrder.push_back(param);
  s.lastReady = Clock::now();
  --s.buckets[s.slots[param].bucket].pending;
  launchReadyBuckets();
}

void Reducer::launchReadyBuckets() {
  State& s = *state_;
  const size_t before = s.nextBucket;
  while (s.nextBucket < s.buckets.size() && s.buckets[s.nextBucket].pending == 0) {
    Bucket& bucket = s.buckets[s.nextBucket];
    if (s.nextBucket == 0) s.firstLaunch = Clock::now();
    const size_t count = bucket.bytes / tutti_type_size(bucket.dtype);
    bucket.work = s.hook ? s.hook->start(s.comm, bucket.data.get(), count, bucket.dtype)
                         : startSum(s.comm, bucket.data.get(), count, bucket.dtype);
    ++s.nextBucket;
  }
  if (before < s.buckets.size() && s.nextBucket == s.buckets.size() &&
      s.options.findUnusedParameters) {
    tuttiRequest_t request = nullptr;
    check(tutti_allreduce(s.used.data(), s.used.data(), s.used.size(), tuttiInt32, tuttiSum, s.comm,
                          &request));
    s.usedRequest = Request(request);
  }
}

void Reducer::finalize() {
  std::lock_guard lock(mutex_);
  State& s = *state_;
  if (!s.syncEnabled) return;
  if (!s.inIteration) usage("finalize without prepareForBackward");
  if (s.nextBucket < s.buckets.size())
    usage("finalize: parameters never marked ready in iteration " + std::to_string(s.iteration) +
          ": " + s.unmarkedParams());
  waitAll();
  s.lastUnused.clear();
  for (size_t param = 0; param < s.grads.size(); ++param) {
    const bool unused = s.options.findUnusedParameters && s.used[param] == 0;
    if (unused) s.lastUnused.push_back(param);
    if (unused && s.inBuckets())
      std::copy(s.setAside[param].begin(), s.setAside[param].end(), s.slotData(param));
    else if (!unused && !s.inBuckets())
      std::memcpy(s.grads[param].data, s.slotData(param), s.grads[param].bytes());
  }
  s.inIteration = false;
  if (s.recording()) s.rebuildPending = true;
}

void Reducer::waitAll() {
  State& s = *state_;
  const Clock::time_point waitStart = Clock::now();
  for (Bucket& bucket : s.buckets) {
    bucket.work->wait();
    bucket.work.reset();
  }
  if (s.options.findUnusedParameters) s.usedRequest.wait();
  const Clock::time_point end = Clock::now();
  s.stats.backwardComputeMs = msBetween(s.start, s.lastReady);
  s.stats.commMs = msBetween(s.firstLaunch, end);
  s.stats.exposedCommMs = msBetween(std::max(waitStart, s.lastReady), end);
  for (const Bucket& bucket : s.buckets) s.stats.bucketBytes.push_back(bucket.bytes);
}

void Reducer::rebuildBuckets() {
  State& s = *state_;
  const std::vector<std::vector<size_t>> local = computeBucketAssignmentBySize(
      s.sizes(), {s.options.firstBucketBytes, s.options.bucketCapBytes}, s.readyOrder);
  std::vector<std::shared_ptr<void>> previous;  // gradients in buckets move to their new slots
  if (s.inBuckets())
    for (size_t param = 0; param < s.grads.size(); ++param) previous.push_back(s.view(param));
  s.build(broadcastAssignment(s.comm, local, s.grads.size()));
  for (size_t param = 0; param < previous.size(); ++param)
    std::memcpy(s.slotData(param), previous[param].get(), s.grads[param].bytes());
  s.rebuilt = true;
  s.rebuildPending = false;
  s.readyOrder.clear();
}

std::vector<std::vector<size_t>> Reducer::bucketAssignment() const {
  std::lock_guard lock(mutex_);
  std::vector<std::vector<size_t>> out;
  for (const Bucket& bucket : state_->buckets) out.push_back(bucket.params);
  return out;
}

std::shared_ptr<void> Reducer::gradientView(size_t param) const {
  std::lock_guard lock(mutex_);
  const State& s = *state_;
  if (!s.inBuckets()) usage("gradientView needs gradientAsBucketView");
  if (param >= s.grads.size()) usage("gradientView: no parameter " + std::to_string(param));
  return s.view(param);
}

std::vector<size_t> Reducer::unusedEverywhere() const {
  std::lock_guard lock(mutex_);
  return state_->lastUnused;
}

bool Reducer::hasRebuiltBuckets() const {
  std::lock_guard lock(mutex_);
  return state_->rebuilt;
}

IterationStats Reducer::lastStats() const {
  std::lock_guard lock(mutex_);
  return state_->stats;
}

}  // namespace tutti::bucketing
