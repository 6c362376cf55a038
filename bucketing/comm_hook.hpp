// bucketing/comm_hook.hpp: how a bucket is reduced. Without a hook the reducer scales each
// gradient by 1/world_size as it copies it in and sums the bucket; a hook takes over both (as
// PyTorch's register_comm_hook does): it starts the reduction of the bucket in place and returns
// what the reducer waits on before reading the bucket again.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "tutti/tutti.h"

namespace tutti::bucketing {

class PendingReduction {
 public:
  virtual ~PendingReduction() = default;
  // Returns once the bucket holds the result; throws tutti::CommError when the reduction failed.
  virtual void wait() = 0;
};

class CommHook {
 public:
  virtual ~CommHook() = default;
  virtual std::string name() const = 0;
  // Starts reducing count elements of dtype at data (float32 or float64), in place. Every rank
  // calls it for the same buckets in the same order.
  virtual std::unique_ptr<PendingReduction> start(tuttiComm_t comm, void* data, size_t count,
                                                  tuttiDataType_t dtype) = 0;
};

// An asynchronous in-place sum over comm (what the reducer uses when no hook is set).
std::unique_ptr<PendingReduction> startSum(tuttiComm_t comm, void* data, size_t count,
                                           tuttiDataType_t dtype);

// Divides by the world size, then sums: the average, as PyTorch's allreduce_hook.
std::unique_ptr<CommHook> allreduceHook();
// Casts to float16 (bfloat16) divided by the world size, sums in that type, casts back: half the
// bytes on the wire, as PyTorch's fp16_compress_hook (bf16_compress_hook).
std::unique_ptr<CommHook> fp16CompressHook();
std::unique_ptr<CommHook> bf16CompressHook();

}  // namespace tutti::bucketing
