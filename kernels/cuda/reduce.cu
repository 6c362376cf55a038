// kernels/cuda/reduce.cu: the device reduce. One kernel per dtype x op (40 in all); nsrcs and ndsts
// are runtime values, so the instantiation matrix and the build stay small. Their loops are
// unrolled to kMaxSrcs/kMaxDsts with a runtime exit: constant indices keep the pointer arrays in
// registers (a dynamic index would copy the kernel arguments to local memory).
//
// Each thread walks the array with a grid-stride loop. When every pointer is 16-byte aligned the
// bulk moves in 16-byte vectors (uint4: 16/sizeof(T) elements per load), and the remainder, or
// everything when a pointer is not 16-byte aligned, element by element: typed loads when all
// pointers are aligned to the element size, byte-wise (memcpy) loads otherwise, as an unaligned
// typed load faults on the GPU. The mode is uniform over the grid, so the branch costs nothing.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/cuda/cuda_kernels.hpp"
#include "kernels/ops.hpp"

namespace tutti::kernels::cuda {
namespace {

enum class Access : int { kVector, kElement, kByte };

struct ReduceArgs {
  const void* srcs[kMaxSrcs];
  void* dsts[kMaxDsts];
  int nsrcs;
  int ndsts;
  size_t count;
  Access access;
};

template <typename T>
__device__ T loadElement(const void* base, size_t i, bool aligned) {
  const char* p = static_cast<const char*>(base) + i * sizeof(T);
  if (aligned) return *reinterpret_cast<const T*>(p);
  T v;
  memcpy(&v, p, sizeof(T));
  return v;
}

template <typename T>
__device__ void storeElement(void* base, size_t i, T v, bool aligned) {
  char* p = static_cast<char*>(base) + i * sizeof(T);
  if (aligned) {
    *reinterpret_cast<T*>(p) = v;
  } else {
    memcpy(p, &v, sizeof(T));
  }
}

template <typename T, typename Op>
__global__ void reduceKernel(ReduceArgs args) {
  using A = AccumT<T>;
  constexpr int kPerVec = 16 / sizeof(T);
  const Op op;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t tid = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;

  const size_t nvec = args.access == Access::kVector ? args.count / kPerVec : 0;
  for (size_t v = tid; v < nvec; v += stride) {
    A acc[kPerVec];
    T elems[kPerVec];
    uint4 raw = static_cast<const uint4*>(args.srcs[0])[v];
    memcpy(elems, &raw, sizeof raw);
#pragma unroll
    for (int k = 0; k < kPerVec; ++k) acc[k] = Accum<T>::widen(elems[k]);
#pragma unroll
    for (int s = 1; s < kMaxSrcs; ++s) {
      if (s >= args.nsrcs) break;
      raw = static_cast<const uint4*>(args.srcs[s])[v];
      memcpy(elems, &raw, sizeof raw);
#pragma unroll
      for (int k = 0; k < kPerVec; ++k) acc[k] = op(acc[k], Accum<T>::widen(elems[k]));
    }
#pragma unroll
    for (int k = 0; k < kPerVec; ++k) elems[k] = Accum<T>::narrow(acc[k]);
    memcpy(&raw, elems, sizeof raw);
#pragma unroll
    for (int d = 0; d < kMaxDsts; ++d) {
      if (d < args.ndsts) static_cast<uint4*>(args.dsts[d])[v] = raw;
    }
  }

  const bool aligned = args.access != Access::kByte;
  for (size_t i = nvec * kPerVec + tid; i < args.count; i += stride) {
    A acc = Accum<T>::widen(loadElement<T>(args.srcs[0], i, aligned));
#pragma unroll
    for (int s = 1; s < kMaxSrcs; ++s) {
      if (s >= args.nsrcs) break;
      acc = op(acc, Accum<T>::widen(loadElement<T>(args.srcs[s], i, aligned)));
    }
    const T out = Accum<T>::narrow(acc);
#pragma unroll
    for (int d = 0; d < kMaxDsts; ++d) {
      if (d < args.ndsts) storeElement<T>(args.dsts[d], i, out, aligned);
    }
  }
}

// The largest power of two (up to 16) that divides every pointer.
size_t commonAlignment(const ReduceArgs& args) {
  uintptr_t bits = 16;
  for (int s = 0; s < args.nsrcs; ++s) bits |= reinterpret_cast<uintptr_t>(args.srcs[s]);
  for (int d = 0; d < args.ndsts; ++d) bits |= reinterpret_cast<uintptr_t>(args.dsts[d]);
  return static_cast<size_t>(bits & (~bits + 1));
}

constexpr int kThreads = 512;
constexpr size_t kMaxBlocks = 1024;  // grid-stride beyond: enough to fill any current GPU

}  // namespace

cudaError_t reduceAsync(void* const* dsts, int ndsts, const void* const* srcs, int nsrcs,
                        size_t count, DataType dtype, RedOp op, cudaStream_t stream) {
  if (nsrcs < 1 || nsrcs > kMaxSrcs || ndsts < 1 || ndsts > kMaxDsts || !isValid(dtype) ||
      !isValid(op)) {
    return cudaErrorInvalidValue;
  }
  if (count == 0) return cudaSuccess;
  ReduceArgs args{};
  for (int s = 0; s < nsrcs; ++s) args.srcs[s] = srcs[s];
  for (int d = 0; d < ndsts; ++d) args.dsts[d] = dsts[d];
  args.nsrcs = nsrcs;
  args.ndsts = ndsts;
  args.count = count;
  const size_t align = commonAlignment(args);
  const size_t elemSize = typeSize(dtype);
  args.access = align == 16         ? Access::kVector
                : align >= elemSize ? Access::kElement
                                    : Access::kByte;

  const size_t perThread = args.access == Access::kVector ? 16 / elemSize : 1;
  const size_t items = (count + perThread - 1) / perThread;
  const size_t blocks = std::min(kMaxBlocks, (items + kThreads - 1) / kThreads);
  visitType(dtype, [&]<typename T>() {
    visitOp(op, [&]<typename Op>() {
      reduceKernel<T, Op><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(args);
    });
  });
  return cudaGetLastError();
}

}  // namespace tutti::kernels::cuda
