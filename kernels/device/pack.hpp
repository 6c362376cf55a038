// kernels/device/pack.hpp: the unit of data the protocols move, N bytes (16 for Simple, 8 for
// LL), loaded and stored with one vector access when the address allows and byte by byte
// otherwise (user buffers may have any alignment; a misaligned vector access faults on the GPU),
// and reduced element by element with the functors of ops.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/ops.hpp"

namespace tutti::kernels::device {

template <size_t N>
struct alignas(N) Pack {
  unsigned char bytes[N];
};

#if defined(__CUDA_ARCH__)
// What one vector access of N bytes reads or writes on the GPU.
template <size_t N>
using Vector = std::conditional_t<N == 16, uint4, uint2>;
#endif

// The N bytes at p, which is aligned to N: one vector access on the GPU.
template <size_t N>
TUTTI_HOST_DEVICE Pack<N> loadAligned(const void* p) {
  static_assert(N == 16 || N == 8, "a pack is one vector");
  Pack<N> v;
#if defined(__CUDA_ARCH__)
  const Vector<N> raw = *static_cast<const Vector<N>*>(p);
  memcpy(v.bytes, &raw, N);
#else
  memcpy(v.bytes, p, N);
#endif
  return v;
}

// Stores v at p, which is aligned to N.
template <size_t N>
TUTTI_HOST_DEVICE void storeAligned(void* p, const Pack<N>& v) {
#if defined(__CUDA_ARCH__)
  Vector<N> raw;
  memcpy(&raw, v.bytes, N);
  *static_cast<Vector<N>*>(p) = raw;
#else
  memcpy(p, v.bytes, N);
#endif
}

// The first `bytes` bytes (<= N) at p, which may have any alignment; the rest of the pack is zero.
template <size_t N>
TUTTI_HOST_DEVICE Pack<N> loadPack(const void* p, size_t bytes) {
  if (bytes == N && reinterpret_cast<uintptr_t>(p) % N == 0) return loadAligned<N>(p);
  Pack<N> v{};
  memcpy(v.bytes, p, bytes);
  return v;
}

// Stores the first `bytes` bytes (<= N) of v at p, which may have any alignment.
template <size_t N>
TUTTI_HOST_DEVICE void storePack(void* p, const Pack<N>& v, size_t bytes) {
  if (bytes == N && reinterpret_cast<uintptr_t>(p) % N == 0) {
    storeAligned(p, v);
  } else {
    memcpy(p, v.bytes, bytes);
  }
}

// a op b for each of the N / sizeof(T) elements, in T's accumulation type (half types: float,
// rounded once, as ops.hpp says). Bytes past the data (a partial pack) are zero in both and are
// reduced too, harmlessly: they are never stored.
template <typename T, typename Op, size_t N>
TUTTI_HOST_DEVICE Pack<N> reducePack(const Pack<N>& a, const Pack<N>& b) {
  constexpr size_t kElems = N / sizeof(T);
  static_assert(kElems * sizeof(T) == N, "a pack holds whole elements");
  T x[kElems], y[kElems];
  memcpy(x, a.bytes, N);
  memcpy(y, b.bytes, N);
  const Op op;
  for (size_t i = 0; i < kElems; ++i) {
    x[i] = Accum<T>::narrow(op(Accum<T>::widen(x[i]), Accum<T>::widen(y[i])));
  }
  Pack<N> out;
  memcpy(out.bytes, x, N);
  return out;
}

}  // namespace tutti::kernels::device
