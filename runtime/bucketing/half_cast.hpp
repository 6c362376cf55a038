// runtime/bucketing/half_cast.hpp: float <-> IEEE binary16 and bfloat16 bit patterns, for the
// compression hooks. float -> 16 bits rounds to nearest, ties to even; overflow gives inf.
#pragma once

#include <cstdint>

namespace tutti::bucketing {

uint16_t floatToHalfBits(float value);
float halfBitsToFloat(uint16_t bits);
uint16_t floatToBfloat16Bits(float value);
float bfloat16BitsToFloat(uint16_t bits);

}  // namespace tutti::bucketing
