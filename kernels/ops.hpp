// kernels/ops.hpp: one functor per reduction operation, shared by the CPU loops (cpu/reduce.cpp)
// and the device kernels (cuda/reduce.cu). Each functor combines two values of the accumulation
// type (Accum<T>::type): half types are widened to float, reduced in float and rounded once at the
// end; every other type is its own accumulation type. avg folds as Sum (avgFinish divides later).
//
// Integers wrap on overflow (two's complement), computed in the unsigned type so that signed
// overflow is never undefined behaviour.
//
// Min and Max propagate NaN: if either operand is NaN the result is NaN, as IEEE 754-2019
// minimum/maximum do. NCCL uses fminf/fmaxf, which return the other operand and so silently drop a
// NaN; we prefer that a NaN gradient on one rank shows on every rank. When the operands compare
// equal (e.g. -0 and +0) the first operand is returned; results are still bitwise identical on
// every rank because every rank folds the sources in the same order.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/half.hpp"
#include "kernels/kernels.hpp"

namespace tutti::kernels {

template <typename T>
struct Accum {
  using type = T;
  TUTTI_HOST_DEVICE static T widen(T v) { return v; }
  TUTTI_HOST_DEVICE static T narrow(T v) { return v; }
};

template <>
struct Accum<float16> {
  using type = float;
  TUTTI_HOST_DEVICE static float widen(float16 v) { return halfBitsToFloat(v.bits); }
  TUTTI_HOST_DEVICE static float16 narrow(float v) { return float16::fromBits(floatToHalfBits(v)); }
};

template <>
struct Accum<bfloat16> {
  using type = float;
  TUTTI_HOST_DEVICE static float widen(bfloat16 v) { return bfloatBitsToFloat(v.bits); }
  TUTTI_HOST_DEVICE static bfloat16 narrow(float v) {
    return bfloat16::fromBits(floatToBfloatBits(v));
  }
};

template <typename T>
using AccumT = typename Accum<T>::type;

// avg's last step on one accumulated value: v / divisor in the accumulation type; integers in 64
// bits (so int8 / 200 is 0, not int8 / -56), truncating toward zero (as NCCL).
template <typename T>
TUTTI_HOST_DEVICE AccumT<T> avgDivide(AccumT<T> v, int divisor) {
  using A = AccumT<T>;
  if constexpr (std::is_floating_point_v<A>) {
    return v / static_cast<A>(divisor);
  } else if constexpr (std::is_signed_v<A>) {
    return static_cast<A>(static_cast<int64_t>(v) / divisor);
  } else {
    return static_cast<A>(static_cast<uint64_t>(v) / static_cast<uint64_t>(divisor));
  }
}

namespace detail {
// The unsigned type in which integer T wraps, at least as wide as unsigned int so that small types
// are not promoted to (signed) int; T itself for floating point.
template <typename T, bool = std::is_integral_v<T>>
struct WrapType {
  using type = std::common_type_t<std::make_unsigned_t<T>, unsigned>;
};
template <typename T>
struct WrapType<T, false> {
  using type = T;
};

template <typename T>
TUTTI_HOST_DEVICE bool isNan(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return v != v;
  } else {
    return false;
  }
}
}  // namespace detail

struct OpSum {
  template <typename T>
  TUTTI_HOST_DEVICE T operator()(T a, T b) const {
    using W = typename detail::WrapType<T>::type;
    return static_cast<T>(static_cast<W>(a) + static_cast<W>(b));
  }
};

struct OpProd {
  template <typename T>
  TUTTI_HOST_DEVICE T operator()(T a, T b) const {
    using W = typename detail::WrapType<T>::type;
    return static_cast<T>(static_cast<W>(a) * static_cast<W>(b));
  }
};

// NaN-propagating: `b < a` is false when either is NaN, which keeps a (NaN if a is); the first
// test returns b when b is NaN.
struct OpMin {
  template <typename T>
  TUTTI_HOST_DEVICE T operator()(T a, T b) const {
    return detail::isNan(b) ? b : (b < a ? b : a);
  }
};

struct OpMax {
  template <typename T>
  TUTTI_HOST_DEVICE T operator()(T a, T b) const {
    return detail::isNan(b) ? b : (a < b ? b : a);
  }
};

// Dispatch, once per call: visitType(dtype, f) calls f.template operator()<T>() with the storage
// type of dtype, visitOp(op, f) calls f.template operator()<Op>() with the functor of op (avg ->
// OpSum). Both return false, calling nothing, for a value outside the enum.
template <typename F>
bool visitType(DataType dtype, F&& f) {
  switch (dtype) {
    case DataType::kInt8: f.template operator()<int8_t>(); return true;
    case DataType::kUint8: f.template operator()<uint8_t>(); return true;
    case DataType::kInt32: f.template operator()<int32_t>(); return true;
    case DataType::kUint32: f.template operator()<uint32_t>(); return true;
    case DataType::kInt64: f.template operator()<int64_t>(); return true;
    case DataType::kUint64: f.template operator()<uint64_t>(); return true;
    case DataType::kFloat16: f.template operator()<float16>(); return true;
    case DataType::kBfloat16: f.template operator()<bfloat16>(); return true;
    case DataType::kFloat32: f.template operator()<float>(); return true;
    case DataType::kFloat64: f.template operator()<double>(); return true;
  }
  return false;
}

template <typename F>
bool visitOp(RedOp op, F&& f) {
  switch (op) {
    case RedOp::kSum:
    case RedOp::kAvg: f.template operator()<OpSum>(); return true;
    case RedOp::kProd: f.template operator()<OpProd>(); return true;
    case RedOp::kMin: f.template operator()<OpMin>(); return true;
    case RedOp::kMax: f.template operator()<OpMax>(); return true;
  }
  return false;
}

}  // namespace tutti::kernels
