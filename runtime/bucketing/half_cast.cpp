// runtime/bucketing/half_cast.cpp: bit-level conversions (no _Float16: not every compiler has it).
#include "runtime/bucketing/half_cast.hpp"

#include <bit>
#include <cmath>

namespace tutti::bucketing {

uint16_t floatToHalfBits(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // NaN
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (magnitude < 0x38800000u) {
    // Below 2^-14: a half subnormal (or zero); the float sum rounds to nearest even for us.
    const float scaled = std::fabs(value) + 0.5f;
    // 0.5 = 2^-1 puts the float's ulp at 2^-24, the half subnormal unit; 1024 units is 2^-14.
    return static_cast<uint16_t>(sign | (std::bit_cast<uint32_t>(scaled) - 0x3f000000u));
  }
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped mantissa bits to even.
  const uint32_t odd = (magnitude >> 13) & 1u;
  const uint32_t rounded = magnitude + 0xfffu + odd - (uint32_t{112} << 23);
  return static_cast<uint16_t>(sign | (rounded >> 13));
}

float halfBitsToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    const float value = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -value : value;
  }
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

uint16_t floatToBfloat16Bits(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  const uint32_t odd = (bits >> 16) & 1u;
  return static_cast<uint16_t>((bits + 0x7fffu + odd) >> 16);
}

float bfloat16BitsToFloat(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

}  // namespace tutti::bucketing
