// Reference math for the kernels tests, written independently of the code under test: half-type
// values are decoded by the textbook formula and rounded by searching the table of all values, so
// that a bug in kernels/half.hpp cannot hide in the expectation.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace tutti::kernels::test {

// A 16-bit binary floating-point format: 1 sign bit, expBits, mantBits.
struct HalfFormat {
  int expBits;
  int mantBits;
  int bias() const { return (1 << (expBits - 1)) - 1; }
  uint16_t expMask() const { return static_cast<uint16_t>(((1 << expBits) - 1) << mantBits); }
  // The largest finite positive code (all ones mantissa, exponent max - 1).
  uint16_t maxFinite() const { return static_cast<uint16_t>(expMask() - 1); }
};
inline constexpr HalfFormat kFp16{5, 10};
inline constexpr HalfFormat kBf16{8, 7};

// (-1)^s * 2^(e - bias) * 1.m, or 2^(1 - bias) * 0.m for e == 0; inf and NaN for e all ones.
inline double decodeFormula(uint16_t bits, HalfFormat f) {
  const int sign = bits >> 15;
  const int e = (bits >> f.mantBits) & ((1 << f.expBits) - 1);
  const int m = bits & ((1 << f.mantBits) - 1);
  double v;
  if (e == (1 << f.expBits) - 1) {
    v = m != 0 ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (e == 0) {
    v = std::ldexp(static_cast<double>(m), 1 - f.bias() - f.mantBits);
  } else {
    v = std::ldexp(static_cast<double>(m + (1 << f.mantBits)), e - f.bias() - f.mantBits);
  }
  return sign ? -v : v;
}

// decodeFormula through a table of all 65536 values (the tests decode millions of values).
inline double decode(uint16_t bits, HalfFormat f) {
  auto build = [](HalfFormat g) {
    std::vector<double> t(65536);
    for (uint32_t b = 0; b < 65536; ++b) t[b] = decodeFormula(static_cast<uint16_t>(b), g);
    return t;
  };
  static const std::vector<double> fp16 = build(kFp16);
  static const std::vector<double> bf16 = build(kBf16);
  return (f.expBits == kFp16.expBits ? fp16 : bf16)[bits];
}

// The value just above the largest finite one, were the exponent unbounded.
inline double beyondMax(HalfFormat f) {
  return std::ldexp(1.0, (1 << f.expBits) - 1 - f.bias());
}

// x rounded to the nearest value of format f, ties to the even code; overflow to inf. Exact for
// any double x. NaN gives a NaN code.
inline uint16_t roundTo(double x, HalfFormat f) {
  if (std::isnan(x)) return static_cast<uint16_t>(f.expMask() | 1u);
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double a = std::fabs(x);
  // Largest code c with decode(c) <= a; codes of non-negative values increase with the value.
  uint32_t lo = 0, hi = f.maxFinite();
  while (lo < hi) {
    const uint32_t mid = (lo + hi + 1) / 2;
    if (decode(static_cast<uint16_t>(mid), f) <= a) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  const uint32_t c = lo;
  const double below = decode(static_cast<uint16_t>(c), f);
  const double above = c == f.maxFinite() ? beyondMax(f) : decode(static_cast<uint16_t>(c + 1), f);
  const double midpoint = (below + above) / 2;  // exact: needs mantBits + 2 bits
  uint32_t code = c;
  if (a > midpoint || (a == midpoint && (c & 1u))) code = c + 1;  // c + 1 past max is inf
  return static_cast<uint16_t>(sign | code);
}

// The value of roundTo(x, f), computed another way and faster: scale x so that format f's quantum
// at x is 1, round to an integer with the FPU (ties to even), scale back.
inline double roundToValue(double x, HalfFormat f) {
  if (std::isnan(x) || x == 0 || std::isinf(x)) return x;
  int e;
  std::frexp(std::fabs(x), &e);                        // |x| in [2^(e-1), 2^e)
  const int exponent = std::max(e - 1, 1 - f.bias());  // subnormals share the smallest
  const double quantum = std::ldexp(1.0, exponent - f.mantBits);
  const double r = std::nearbyint(std::fabs(x) / quantum) * quantum;
  return std::copysign(r >= beyondMax(f) ? std::numeric_limits<double>::infinity() : r, x);
}

// Distance in units in the last place, counting -0 and +0 as one value.
inline int ulpDistance(uint16_t a, uint16_t b) {
  auto ordered = [](uint16_t v) { return v & 0x8000 ? -(v & 0x7fff) : (v & 0x7fff); };
  return std::abs(ordered(a) - ordered(b));
}

// Bytes with a chosen misalignment, guarded by sentinel bytes on both sides.
class Buffer {
 public:
  static constexpr size_t kGuard = 64;
  static constexpr unsigned char kSentinel = 0xCD;
  // data() is `offset` bytes past a 64-byte boundary.
  Buffer(size_t bytes, size_t offset)
      : bytes_(bytes), storage_(kGuard + 63 + offset + bytes + kGuard, kSentinel) {
    const auto first = reinterpret_cast<uintptr_t>(storage_.data()) + kGuard;
    begin_ = storage_.data() + kGuard + (64 - first % 64) % 64 + offset;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&&) noexcept = default;
  Buffer& operator=(Buffer&&) noexcept = default;
  unsigned char* data() { return begin_; }
  size_t bytes() const { return bytes_; }
  // True when no byte outside [data(), data() + bytes) changed.
  bool guardsIntact() const {
    for (const unsigned char* p = storage_.data(); p < begin_; ++p) {
      if (*p != kSentinel) return false;
    }
    for (const unsigned char* p = begin_ + bytes_; p < storage_.data() + storage_.size(); ++p) {
      if (*p != kSentinel) return false;
    }
    return true;
  }
  template <typename T>
  T get(size_t i) const {
    T v;
    std::memcpy(&v, begin_ + i * sizeof(T), sizeof(T));
    return v;
  }
  template <typename T>
  void set(size_t i, T v) {
    std::memcpy(begin_ + i * sizeof(T), &v, sizeof(T));
  }

 private:
  size_t bytes_;
  std::vector<unsigned char> storage_;
  unsigned char* begin_;
};

}  // namespace tutti::kernels::test
