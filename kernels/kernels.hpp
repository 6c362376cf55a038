// kernels: the reduce and copy primitives every collective is built from. This is the layer's one
// API header; it depends on nothing else in tutti.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tutti::kernels {

// Values match tuttiDataType_t / tuttiRedOp_t in include/tutti/tutti.h (static_asserts in
// runtime/c_api.cpp hold them to it).
enum class DataType : int {
  kInt8 = 0,
  kUint8 = 1,
  kInt32 = 2,
  kUint32 = 3,
  kInt64 = 4,
  kUint64 = 5,
  kFloat16 = 6,
  kBfloat16 = 7,
  kFloat32 = 8,
  kFloat64 = 9,
};
constexpr int kNumDataTypes = 10;

enum class RedOp : int { kSum = 0, kProd = 1, kMin = 2, kMax = 3, kAvg = 4 };
constexpr int kNumRedOps = 5;

size_t typeSize(DataType dtype);
const char* typeName(DataType dtype);  // "int8", ..., "float16", "bfloat16", "float32", ...
const char* opName(RedOp op);          // "sum", "prod", "min", "max", "avg"
bool isValid(DataType dtype);
bool isValid(RedOp op);

// How the results are written. Streaming stores (non-temporal: x86's movnt) go to memory without
// first reading each destination line into this core's cache, and leave no copy there: a slot that
// a peer on another core reads next, then this core rewrites, costs no cache-line handoffs either
// way. Whether that wins depends on the machine (tutti-bench tune measures it: the tuning key
// shm_streaming_min_bytes). Where the CPU has none, they are plain stores. Either way every store
// is visible to other cores once the call returns.
enum class Stores { kCached, kStreaming };

// For every i < count: v = srcs[0][i] op srcs[1][i] op ... op srcs[nsrcs-1][i], folded left to
// right; v is written to each of dsts[0..ndsts-1]. avg folds as sum (avgFinish divides later).
// Half types accumulate in float and round once at the end. Any pointer may be unaligned; a dst
// may alias a src. nsrcs >= 1, ndsts >= 1.
void reduce(void* const* dsts, int ndsts, const void* const* srcs, int nsrcs, size_t count,
            DataType dtype, RedOp op, Stores stores = Stores::kCached);

// dst[i] = src[i] / divisor: the last step of avg (integers truncate toward zero, as NCCL).
void avgFinish(void* dst, const void* src, size_t count, DataType dtype, int divisor);

// Copies bytes to each of dsts[0..ndsts-1].
void copy(void* const* dsts, int ndsts, const void* src, size_t bytes,
          Stores stores = Stores::kCached);

}  // namespace tutti::kernels
