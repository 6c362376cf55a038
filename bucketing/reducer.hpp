// bucketing/reducer.hpp: gradient averaging for data-parallel training, as PyTorch's
// Reducer (torch/csrc/distributed/c10d/reducer.cpp) does it, over tutti's public API.
//
// One iteration: prepareForBackward(), then markReady(i) from each parameter's gradient hook as
// backward produces it, then finalize(). markReady copies the gradient (the caller's buffer,
// TensorBuffer::data) into its bucket; a complete bucket is all-reduced asynchronously, buckets
// strictly in order on every rank, while backward goes on; finalize waits for every bucket and
// writes the averages back into the gradient buffers.
//
// Buckets: the gradients of one dtype, in reverse declaration order (PyTorch's assignment
// reversed). The first iteration uses one bucket per dtype unless singleBucketFirstIteration is
// off or findUnusedParameters is on; then the first bucket closes at firstBucketBytes and the
// others at bucketCapBytes. After the first synchronised iteration the buckets are rebuilt once
// from the order gradients became ready (rank 0's, so every rank agrees), first bucket first.
// Host memory, float32 and float64 gradients.
//
// With gradientAsBucketView the gradients live in the buckets instead (PyTorch's
// gradient_as_bucket_view): the caller accumulates gradient i at gradientView(i), markReady scales
// it in place and finalize leaves the averages there, which saves both copies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "bucketing/bucket_assignment.hpp"
#include "bucketing/comm_hook.hpp"
#include "bucketing/tensor.hpp"
#include "tutti/tutti.h"

namespace tutti::bucketing {

struct ReducerOptions {
  size_t bucketCapBytes = kDefaultBucketCapBytes;
  size_t firstBucketBytes = kFirstBucketBytes;
  // Parameters may get no gradient in an iteration: prepareForBackward names the local ones, and
  // those unused on every rank keep their gradient buffers untouched. Disables the rebuild.
  bool findUnusedParameters = false;
  bool singleBucketFirstIteration = true;
  // TensorBuffer::data is then not used: see gradientView.
  bool gradientAsBucketView = false;
};

// One synchronised iteration. Times in milliseconds from prepareForBackward.
struct IterationStats {
  int64_t iteration = 0;
  double backwardComputeMs = 0;  // until the last gradient was marked ready
  double commMs = 0;             // from the first bucket's launch until all were done
  double exposedCommMs = 0;      // communication after backward ended: not hidden by compute
  std::vector<size_t> bucketBytes;
};

class Reducer {
 public:
  // comm stays the caller's and must outlive the reducer; gradients holds one buffer per
  // parameter in declaration order.
  Reducer(tuttiComm_t comm, std::vector<TensorBuffer> gradients, ReducerOptions options = {});
  ~Reducer();
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  // Replaces the default average; set it the same way on every rank before the first iteration.
  void setCommHook(std::unique_ptr<CommHook> hook);
  // Off: markReady and finalize do nothing and gradients just accumulate in the caller's buffers
  // (PyTorch's no_sync); the next synchronised iteration averages the accumulated sums.
  void setSyncEnabled(bool enabled);
  bool syncEnabled() const;

  // Throws when the previous iteration was not finalized, naming the parameters it never got.
  // unusedLocally: parameters that get no gradient on this rank (findUnusedParameters only).
  void prepareForBackward(const std::vector<size_t>& unusedLocally = {});
  // Thread-safe. Throws for a parameter marked twice in one iteration.
  void markReady(size_t param);
  void finalize();

  // gradientAsBucketView only: where gradient param lives, zeroed at construction. The rebuild
  // moves it, values included; the pointer shares ownership of the bucket, so memory taken before
  // the rebuild stays valid (but is no longer read).
  std::shared_ptr<void> gradientView(size_t param) const;
  // findUnusedParameters: the parameters no rank used in the last finalized iteration, whose
  // gradients finalize left untouched.
  std::vector<size_t> unusedEverywhere() const;

  std::vector<std::vector<size_t>> bucketAssignment() const;
  bool hasRebuiltBuckets() const;
  IterationStats lastStats() const;

 private:
  struct Bucket;
  struct State;
  void launchReadyBuckets();
  void rebuildBuckets();
  void waitAll();

  mutable std::mutex mutex_;
  std::unique_ptr<State> state_;
};

}  // namespace tutti::bucketing
