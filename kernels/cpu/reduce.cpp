// kernels/cpu/reduce.cpp: reduce, avgFinish and copy on host memory.
//
// The work is cut into blocks of kBlock elements. For each block the first source is widened into
// a local accumulator array, every further source is folded into it (left to right), and the
// result is narrowed and written to each destination. The accumulator stays in L1 across sources,
// all loads of a block happen before its stores (so a dst may alias a src), and full blocks have a
// compile-time trip count, so GCC vectorises the loops at -O2 and above. The last partial block
// runs the same code with a runtime length.
//
// Elements are loaded and stored with memcpy: legal at any alignment (a cast of an unaligned
// pointer to float* would be undefined behaviour), and compiled to plain unaligned vector moves,
// which cost the same as aligned ones on aligned data. So there is one path, not two.
//
// Streaming stores (Stores::kStreaming) replace only the writes of a block to its destinations:
// the block is computed in the local array as always, then streamed out 16 bytes at a time where
// the destination is 16-byte aligned (slots and large buffers are; others get plain stores), the
// last bytes of an odd length plainly; a store fence at the end orders them before whatever
// publishes the result.
#include <cassert>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "kernels/kernels.hpp"
#include "kernels/ops.hpp"

namespace tutti::kernels {
namespace {

constexpr size_t kBlock = 256;

using Byte = unsigned char;

// Writes `bytes` of `src` to `dst` the way `stores` says. Only a 16-byte aligned destination
// streams: blocks are multiples of 16 bytes, so then every block starts aligned, while an
// unaligned one would mix plain and streaming stores in the lines at each block's edges.
void store(void* dst, const void* src, size_t bytes, Stores stores) {
#if defined(__x86_64__)
  if (stores == Stores::kStreaming && reinterpret_cast<uintptr_t>(dst) % 16 == 0) {
    auto* to = static_cast<Byte*>(dst);
    const auto* from = static_cast<const Byte*>(src);
    size_t done = 0;
    for (; done + 16 <= bytes; done += 16)
      _mm_stream_si128(reinterpret_cast<__m128i*>(to + done),
                       _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + done)));
    std::memcpy(to + done, from + done, bytes - done);
    return;
  }
#endif
  (void)stores;
  std::memcpy(dst, src, bytes);
}

// Orders the streaming stores before the stores that follow (a slot's publication).
void fence(Stores stores) {
#if defined(__x86_64__)
  if (stores == Stores::kStreaming) _mm_sfence();
#endif
  (void)stores;
}

template <typename T>
T load(const Byte* p, size_t i) {
  T v;
  std::memcpy(&v, p + i * sizeof(T), sizeof(T));
  return v;
}

// Reduces elements [first, first + len) of every source into every destination. N > 0 is a
// compile-time len (full blocks); N == 0 takes len from the argument (the tail).
template <typename T, typename Op, size_t N>
void reduceBlock(void* const* dsts, int ndsts, const void* const* srcs, int nsrcs, size_t first,
                 size_t tailLen, Stores stores) {
  using A = AccumT<T>;
  const size_t len = N > 0 ? N : tailLen;
  const size_t offset = first * sizeof(T);
  const Op op;
  A acc[kBlock];
  const Byte* s0 = static_cast<const Byte*>(srcs[0]) + offset;
  for (size_t i = 0; i < len; ++i) acc[i] = Accum<T>::widen(load<T>(s0, i));
  for (int s = 1; s < nsrcs; ++s) {
    const Byte* p = static_cast<const Byte*>(srcs[s]) + offset;
    for (size_t i = 0; i < len; ++i) acc[i] = op(acc[i], Accum<T>::widen(load<T>(p, i)));
  }
  if constexpr (std::is_same_v<T, A>) {
    for (int d = 0; d < ndsts; ++d) {
      store(static_cast<Byte*>(dsts[d]) + offset, acc, len * sizeof(T), stores);
    }
  } else {
    T out[kBlock];
    for (size_t i = 0; i < len; ++i) out[i] = Accum<T>::narrow(acc[i]);
    for (int d = 0; d < ndsts; ++d) {
      store(static_cast<Byte*>(dsts[d]) + offset, out, len * sizeof(T), stores);
    }
  }
}

template <typename T, typename Op>
void reduceTyped(void* const* dsts, int ndsts, const void* const* srcs, int nsrcs, size_t count,
                 Stores stores) {
  size_t first = 0;
  for (; first + kBlock <= count; first += kBlock) {
    reduceBlock<T, Op, kBlock>(dsts, ndsts, srcs, nsrcs, first, kBlock, stores);
  }
  if (first < count) reduceBlock<T, Op, 0>(dsts, ndsts, srcs, nsrcs, first, count - first, stores);
  fence(stores);
}

template <typename T>
void avgTyped(void* dst, const void* src, size_t count, int divisor) {
  const Byte* in = static_cast<const Byte*>(src);
  Byte* out = static_cast<Byte*>(dst);
  for (size_t i = 0; i < count; ++i) {
    const T v = Accum<T>::narrow(avgDivide<T>(Accum<T>::widen(load<T>(in, i)), divisor));
    std::memcpy(out + i * sizeof(T), &v, sizeof(T));
  }
}

}  // namespace

void reduce(void* const* dsts, int ndsts, const void* const* srcs, int nsrcs, size_t count,
            DataType dtype, RedOp op, Stores stores) {
  assert(nsrcs >= 1 && ndsts >= 1);
  if (count == 0) return;
  bool valid = false;
  visitType(dtype, [&]<typename T>() {
    valid = visitOp(
        op, [&]<typename Op>() { reduceTyped<T, Op>(dsts, ndsts, srcs, nsrcs, count, stores); });
  });
  assert(valid && "reduce: invalid dtype or op");
  (void)valid;
}

void avgFinish(void* dst, const void* src, size_t count, DataType dtype, int divisor) {
  assert(divisor >= 1);
  if (count == 0) return;
  const bool valid = visitType(dtype, [&]<typename T>() { avgTyped<T>(dst, src, count, divisor); });
  assert(valid && "avgFinish: invalid dtype");
  (void)valid;
}

void copy(void* const* dsts, int ndsts, const void* src, size_t bytes, Stores stores) {
  if (bytes == 0) return;
  for (int d = 0; d < ndsts; ++d) {
    if (dsts[d] != src) store(dsts[d], src, bytes, stores);
  }
  fence(stores);
}

}  // namespace tutti::kernels
