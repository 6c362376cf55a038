#include "reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

namespace tutti::testing {
namespace {

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

bool isUnsigned(tuttiDataType_t dtype) {
  return dtype == tuttiUint8 || dtype == tuttiUint32 || dtype == tuttiUint64;
}

bool isFloat(tuttiDataType_t dtype) {
  return dtype == tuttiFloat16 || dtype == tuttiBfloat16 || dtype == tuttiFloat32 ||
         dtype == tuttiFloat64;
}

// IEEE half from a float, rounded to nearest even, by arithmetic rather than tutti's bit
// manipulation (and without _Float16, which clang 14 lacks on x86). Finite inputs only: the
// tests' values are small integers and their means.
uint16_t halfFromFloat(float value) {
  const double magnitude = std::fabs(static_cast<double>(value));
  const uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  if (magnitude == 0) return sign;
  int exponent = 0;
  std::frexp(magnitude, &exponent);
  exponent = std::max(exponent - 1, -14);  // of the leading bit; -14 and below: subnormal
  double mantissa = std::nearbyint(std::ldexp(magnitude, 10 - exponent));  // ties to even
  if (mantissa >= 2048) {  // rounding carried into the next power of two
    mantissa /= 2;
    ++exponent;
  }
  if (exponent > 15) return sign | 0x7c00;                             // overflow: infinity
  if (mantissa < 1024) return sign | static_cast<uint16_t>(mantissa);  // subnormal
  return sign | static_cast<uint16_t>((exponent + 15) << 10) |
         static_cast<uint16_t>(mantissa - 1024);
}

// Exact encodings of small integers, written without tutti's own conversions.
uint16_t halfBits(int64_t v) {
  return halfFromFloat(static_cast<float>(v));
}

uint16_t bfloat16Bits(int64_t v) {
  const float f = static_cast<float>(v);  // small integers: the low 16 bits are zero
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return static_cast<uint16_t>(bits >> 16);
}

double halfValue(uint16_t bits) {
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  const double sign = (bits & 0x8000) ? -1.0 : 1.0;
  if (exponent == 0x1f) return mantissa ? std::nan("") : sign * INFINITY;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

double bfloat16Value(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &wide, 4);
  return f;
}

template <typename T>
void put(void* dst, T value) {
  std::memcpy(dst, &value, sizeof(T));
}

template <typename T>
T get(const void* src, size_t index) {
  T value;
  std::memcpy(&value, static_cast<const char*>(src) + index * sizeof(T), sizeof(T));
  return value;
}

}  // namespace

int64_t inputValue(uint64_t seed, int rank, size_t index, tuttiDataType_t dtype, tuttiRedOp_t op) {
  const uint64_t h =
      mix(seed * 0x9e3779b97f4a7c15ULL ^ mix(static_cast<uint64_t>(rank) << 40 ^ index));
  const bool unsignedType = isUnsigned(dtype);
  switch (op) {
    case tuttiProd: {
      const uint64_t pick = h % 16;
      if (pick == 0) return 2;
      if (pick == 1 && !unsignedType) return -1;
      return 1;
    }
    case tuttiMin:
    case tuttiMax:
      return unsignedType ? static_cast<int64_t>(h % 101) : static_cast<int64_t>(h % 201) - 100;
    default: return unsignedType ? static_cast<int64_t>(h % 5) : static_cast<int64_t>(h % 9) - 4;
  }
}

void store(void* dst, tuttiDataType_t dtype, int64_t v) {
  switch (dtype) {
    case tuttiInt8: put(dst, static_cast<int8_t>(v)); break;
    case tuttiUint8: put(dst, static_cast<uint8_t>(v)); break;
    case tuttiInt32: put(dst, static_cast<int32_t>(v)); break;
    case tuttiUint32: put(dst, static_cast<uint32_t>(v)); break;
    case tuttiInt64: put(dst, static_cast<int64_t>(v)); break;
    case tuttiUint64: put(dst, static_cast<uint64_t>(v)); break;
    case tuttiFloat16: put(dst, halfBits(v)); break;
    case tuttiBfloat16: put(dst, bfloat16Bits(v)); break;
    case tuttiFloat32: put(dst, static_cast<float>(v)); break;
    case tuttiFloat64: put(dst, static_cast<double>(v)); break;
    default: break;
  }
}

double load(const void* src, tuttiDataType_t dtype, size_t index) {
  switch (dtype) {
    case tuttiInt8: return get<int8_t>(src, index);
    case tuttiUint8: return get<uint8_t>(src, index);
    case tuttiInt32: return get<int32_t>(src, index);
    case tuttiUint32: return get<uint32_t>(src, index);
    case tuttiInt64: return static_cast<double>(get<int64_t>(src, index));
    case tuttiUint64: return static_cast<double>(get<uint64_t>(src, index));
    case tuttiFloat16: return halfValue(get<uint16_t>(src, index));
    case tuttiBfloat16: return bfloat16Value(get<uint16_t>(src, index));
    case tuttiFloat32: return get<float>(src, index);
    case tuttiFloat64: return get<double>(src, index);
    default: return 0;
  }
}

void fill(void* buffer, size_t count, tuttiDataType_t dtype, tuttiRedOp_t op, uint64_t seed,
          int rank, size_t first) {
  const size_t size = tutti_type_size(dtype);
  for (size_t i = 0; i < count; ++i)
    store(static_cast<char*>(buffer) + i * size, dtype,
          inputValue(seed, rank, first + i, dtype, op));
}

void expectReduced(void* dst, tuttiDataType_t dtype, tuttiRedOp_t op, uint64_t seed, int nranks,
                   size_t index) {
  int64_t acc = inputValue(seed, 0, index, dtype, op);
  for (int rank = 1; rank < nranks; ++rank) {
    const int64_t v = inputValue(seed, rank, index, dtype, op);
    switch (op) {
      case tuttiSum:
      case tuttiAvg: acc += v; break;
      case tuttiProd: acc *= v; break;
      case tuttiMin: acc = std::min(acc, v); break;
      case tuttiMax: acc = std::max(acc, v); break;
      default: break;
    }
  }
  if (op != tuttiAvg) return store(dst, dtype, acc);
  if (!isFloat(dtype)) return store(dst, dtype, acc / nranks);  // C++ truncates toward zero
  const double mean = static_cast<double>(acc) / nranks;
  switch (dtype) {
    case tuttiFloat32: return put(dst, static_cast<float>(mean));
    case tuttiFloat64: return put(dst, mean);
    case tuttiFloat16: return put(dst, halfFromFloat(static_cast<float>(mean)));
    default: {  // bfloat16: round to nearest even from float
      const float f = static_cast<float>(mean);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      bits += 0x7fff + ((bits >> 16) & 1);
      return put(dst, static_cast<uint16_t>(bits >> 16));
    }
  }
}

std::string compare(const void* got, const void* expected, size_t count, tuttiDataType_t dtype,
                    tuttiRedOp_t op) {
  const size_t size = tutti_type_size(dtype);
  const bool tolerant = op == tuttiAvg && isFloat(dtype);
  const double epsilon = dtype == tuttiFloat16    ? 2e-3
                         : dtype == tuttiBfloat16 ? 1.6e-2
                         : dtype == tuttiFloat32  ? 2.5e-7
                                                  : 5e-16;
  std::ostringstream out;
  int shown = 0;
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    const char* g = static_cast<const char*>(got) + i * size;
    const char* e = static_cast<const char*>(expected) + i * size;
    bool equal = std::memcmp(g, e, size) == 0;
    if (!equal && tolerant) {
      const double a = load(got, dtype, i), b = load(expected, dtype, i);
      equal = std::fabs(a - b) <= epsilon * std::max(1.0, std::fabs(b));
    }
    if (equal) continue;
    ++wrong;
    if (shown++ < 4)
      out << " [" << i << "] got " << load(got, dtype, i) << " expected "
          << load(expected, dtype, i);
  }
  if (wrong == 0) return "";
  return std::to_string(wrong) + " wrong of " + std::to_string(count) + ":" + out.str();
}

}  // namespace tutti::testing
