// What reduce must produce, per storage type, computed independently of the code under test:
// integers in 64-bit modular arithmetic, floating point in double (long double for float64), half
// types decoded and rounded through reference.hpp's tables. Also the input generators.
#pragma once

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#include "kernels/half.hpp"
#include "kernels/kernels.hpp"
#include "tests/unit/kernels/reference.hpp"

namespace tutti::kernels::test {

// Every op and every dtype, for the tests that sweep them.
inline constexpr RedOp kOps[] = {RedOp::kSum, RedOp::kProd, RedOp::kMin, RedOp::kMax, RedOp::kAvg};
inline constexpr DataType kTypes[] = {DataType::kInt8,    DataType::kUint8,    DataType::kInt32,
                                      DataType::kUint32,  DataType::kInt64,    DataType::kUint64,
                                      DataType::kFloat16, DataType::kBfloat16, DataType::kFloat32,
                                      DataType::kFloat64};

// kSmallInts: small integers, so every float result is exact in any order of reduction.
// kRandom: values spread over the type's range; float results within a stated tolerance.
enum class Mode { kSmallInts, kRandom };

template <typename T>
constexpr DataType dataTypeOf() {
  if constexpr (std::is_same_v<T, int8_t>) return DataType::kInt8;
  if constexpr (std::is_same_v<T, uint8_t>) return DataType::kUint8;
  if constexpr (std::is_same_v<T, int32_t>) return DataType::kInt32;
  if constexpr (std::is_same_v<T, uint32_t>) return DataType::kUint32;
  if constexpr (std::is_same_v<T, int64_t>) return DataType::kInt64;
  if constexpr (std::is_same_v<T, uint64_t>) return DataType::kUint64;
  if constexpr (std::is_same_v<T, float16>) return DataType::kFloat16;
  if constexpr (std::is_same_v<T, bfloat16>) return DataType::kBfloat16;
  if constexpr (std::is_same_v<T, float>) return DataType::kFloat32;
  if constexpr (std::is_same_v<T, double>) return DataType::kFloat64;
}

template <typename T>
constexpr bool kIsHalf = std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;

template <typename T>
constexpr HalfFormat halfFormat() {
  return std::is_same_v<T, float16> ? kFp16 : kBf16;
}

// Left fold of x[0..n) in R with op; avg is a sum here. std::min/std::max keep the first operand
// on ties, as the kernels document.
template <typename R>
R fold(const R* x, int n, RedOp op) {
  R r = x[0];
  for (int i = 1; i < n; ++i) {
    switch (op) {
      case RedOp::kSum:
      case RedOp::kAvg: r = r + x[i]; break;
      case RedOp::kProd: r = r * x[i]; break;
      case RedOp::kMin: r = std::min(r, x[i]); break;
      case RedOp::kMax: r = std::max(r, x[i]); break;
    }
  }
  return r;
}

template <typename T>
T randomValue(std::mt19937_64& rng, RedOp op, Mode mode) {
  auto smallInt = [&] {
    return op == RedOp::kProd ? static_cast<int>(rng() % 7) - 3 : static_cast<int>(rng() % 17) - 8;
  };
  auto sign = [&] { return rng() % 2 ? -1.0 : 1.0; };
  auto uniform = [&](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  };
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(rng());  // full range: sums and products wrap all the time
  } else if constexpr (kIsHalf<T>) {
    constexpr HalfFormat f = halfFormat<T>();
    if (mode == Mode::kSmallInts) return T::fromBits(roundTo(smallInt(), f));
    const uint16_t mant = static_cast<uint16_t>(rng() % (1u << f.mantBits));
    const uint16_t s = rng() % 2 ? 0x8000 : 0;
    if (op == RedOp::kMin || op == RedOp::kMax) {  // any non-NaN pattern: inf, subnormal, -0...
      auto b = static_cast<uint16_t>(rng());
      while (std::isnan(decode(b, f))) b = static_cast<uint16_t>(rng());
      return T::fromBits(b);
    }
    // Sums: |x| in [1, 128), so a sum of up to five is exact in float and is rounded only once.
    // Products: |x| in [0.5, 2).
    const int e = op == RedOp::kProd ? -static_cast<int>(rng() % 2) : static_cast<int>(rng() % 7);
    return T::fromBits(static_cast<uint16_t>(s | ((e + f.bias()) << f.mantBits) | mant));
  } else {
    if (mode == Mode::kSmallInts) return static_cast<T>(smallInt());
    if (op == RedOp::kMin || op == RedOp::kMax) {
      using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
      T v;
      do {
        const auto b = static_cast<Bits>(rng());
        std::memcpy(&v, &b, sizeof v);
      } while (std::isnan(v));
      return v;
    }
    if (op == RedOp::kProd) return static_cast<T>(sign() * uniform(0.5, 2.0));
    return static_cast<T>(uniform(-100.0, 100.0));
  }
}

// Inputs for a ring all-reduce (kernels/device/ring_allreduce.hpp), exact in its order of
// reduction: small integers, but for products in half types: the ring rounds to 16 bits at
// every step, and a product of eight values of up to 3 in magnitude needs more bits than
// bfloat16 has (3^8 = 6561), while products of 0, +-1 and +-2 stay exact.
template <typename T>
T ringInput(std::mt19937_64& rng, RedOp op) {
  if constexpr (kIsHalf<T>) {
    if (op == RedOp::kProd) return T(static_cast<float>(static_cast<int>(rng() % 5) - 2));
  }
  return randomValue<T>(rng, op, Mode::kSmallInts);
}

// The collectives of the device protocol, as the C API (include/tutti/tutti.h) defines them.
enum class Collective { kAllReduce, kReduceScatter, kAllGather, kBroadcast, kReduce };

inline const char* collectiveName(Collective c) {
  switch (c) {
    case Collective::kAllReduce: return "all-reduce";
    case Collective::kReduceScatter: return "reduce-scatter";
    case Collective::kAllGather: return "allgather";
    case Collective::kBroadcast: return "broadcast";
    case Collective::kReduce: return "reduce";
  }
  return "?";
}

inline bool reduces(Collective c) {
  return c == Collective::kAllReduce || c == Collective::kReduceScatter || c == Collective::kReduce;
}

// One rank's buffers for a collective of `count` (the C API's: for reduce-scatter and allgather,
// one rank's block), in elements. In place they are one buffer of max(sendCount, recvCount)
// elements holding the send data at sendOffset and the output at recvOffset. `writes`: whether
// this rank has an output at all (reduce: the root only).
struct BufferLayout {
  size_t sendCount;
  size_t recvCount;
  size_t sendOffset;
  size_t recvOffset;
  bool writes;
};

inline BufferLayout layoutOf(Collective c, int nranks, int rank, int root, size_t count) {
  const size_t all = static_cast<size_t>(nranks) * count, mine = static_cast<size_t>(rank) * count;
  switch (c) {
    case Collective::kReduceScatter: return {all, count, 0, mine, true};
    case Collective::kAllGather: return {count, all, mine, 0, true};
    case Collective::kReduce: return {count, count, 0, 0, rank == root};
    default: return {count, count, 0, 0, true};
  }
}

struct Source {
  int rank;
  size_t index;  // in that rank's send data
};

// The send elements whose reduction, in rank order, is element j of `rank`'s output (a copy
// where there is only one).
inline std::vector<Source> sourcesOf(Collective c, int nranks, int root, size_t count, int rank,
                                     size_t j) {
  std::vector<Source> sources;
  switch (c) {
    case Collective::kAllReduce:
    case Collective::kReduce:
      for (int r = 0; r < nranks; ++r) sources.push_back({r, j});
      break;
    case Collective::kReduceScatter:
      for (int r = 0; r < nranks; ++r)
        sources.push_back({r, static_cast<size_t>(rank) * count + j});
      break;
    case Collective::kAllGather: sources.push_back({static_cast<int>(j / count), j % count}); break;
    case Collective::kBroadcast: sources.push_back({root, j}); break;
  }
  return sources;
}

// Checks got against the reduction of x[0..n); *wantOut receives the expected value, for messages.
template <typename T>
bool matches(T got, const T* x, int n, RedOp op, Mode mode, double* wantOut) {
  if constexpr (std::is_integral_v<T>) {
    using W = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
    uint64_t acc = static_cast<uint64_t>(static_cast<W>(x[0]));
    W best = x[0];
    for (int i = 1; i < n; ++i) {
      const auto v = static_cast<uint64_t>(static_cast<W>(x[i]));
      if (op == RedOp::kSum || op == RedOp::kAvg) acc += v;
      if (op == RedOp::kProd) acc *= v;
      if (op == RedOp::kMin && static_cast<W>(x[i]) < best) best = x[i];
      if (op == RedOp::kMax && static_cast<W>(x[i]) > best) best = x[i];
    }
    const T want =
        op == RedOp::kMin || op == RedOp::kMax ? static_cast<T>(best) : static_cast<T>(acc);
    *wantOut = static_cast<double>(want);
    return got == want;
  } else if constexpr (kIsHalf<T>) {
    constexpr HalfFormat f = halfFormat<T>();
    double v[8];
    for (int i = 0; i < n; ++i) v[i] = decode(x[i].bits, f);
    const double exact = fold(v, n, op);
    const double want = roundToValue(exact, f);
    const double value = decode(got.bits, f);
    *wantOut = want;
    if (value == want && std::signbit(value) == std::signbit(want)) return true;
    // Exact but for products of more than two random values, which float rounds before the
    // final rounding to 16 bits: there, within 1 ulp of the correctly rounded result.
    const bool loose = mode == Mode::kRandom && op == RedOp::kProd && n > 2;
    return loose && ulpDistance(got.bits, roundTo(exact, f)) <= 1;
  } else {
    using R = std::conditional_t<std::is_same_v<T, float>, double, long double>;
    R v[8];
    R sumAbs = 0;
    for (int i = 0; i < n; ++i) {
      v[i] = x[i];
      sumAbs += std::fabs(v[i]);
    }
    const R ref = fold(v, n, op);
    const T want = static_cast<T>(ref);
    *wantOut = static_cast<double>(want);
    // Exact: small integers, min/max, one source, and for float32 two sources (double rounding
    // through double is innocuous for one operation: 53 >= 2 * 24 + 2). Otherwise the bound of a
    // left fold: (n - 1) roundings, each within epsilon of the partial results.
    const bool exact = mode == Mode::kSmallInts || op == RedOp::kMin || op == RedOp::kMax ||
                       n == 1 || (std::is_same_v<T, float> && n == 2);
    if (exact) return std::memcmp(&got, &want, sizeof got) == 0;
    const R eps = std::is_same_v<T, float> ? FLT_EPSILON : DBL_EPSILON;
    const R scale = op == RedOp::kProd ? std::fabs(ref) : sumAbs;
    return std::fabs(static_cast<R>(got) - ref) <= (n - 1) * eps * scale;
  }
}

template <typename T>
double toDouble(T v) {
  if constexpr (kIsHalf<T>) {
    return decode(v.bits, halfFormat<T>());
  } else {
    return static_cast<double>(v);
  }
}

}  // namespace tutti::kernels::test
