// float16 / bfloat16 conversions: known patterns, rounding to even, and exact round trips.
#include "runtime/bucketing/half_cast.hpp"

#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>

namespace tb = tutti::bucketing;

TEST_CASE("float16 known values and rounding", "[bucketing]") {
  CHECK(tb::floatToHalfBits(1.0f) == 0x3c00);
  CHECK(tb::floatToHalfBits(-2.0f) == 0xc000);
  CHECK(tb::floatToHalfBits(65504.0f) == 0x7bff);
  CHECK(tb::floatToHalfBits(65520.0f) == 0x7c00);                          // rounds to inf
  CHECK(tb::floatToHalfBits(std::ldexp(1.0f, -24)) == 0x0001);             // smallest subnormal
  CHECK(tb::floatToHalfBits(std::ldexp(1.0f, -26)) == 0x0000);             // below half of it
  CHECK(tb::floatToHalfBits(std::ldexp(1.0f, -14)) == 0x0400);             // smallest normal
  CHECK(tb::floatToHalfBits(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);      // tie to even
  CHECK(tb::floatToHalfBits(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);  // tie to even
  CHECK(std::isnan(tb::halfBitsToFloat(tb::floatToHalfBits(NAN))));
}

TEST_CASE("every float16 pattern survives a round trip", "[bucketing]") {
  int failures = 0;
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const auto half = static_cast<uint16_t>(bits);
    if ((half & 0x7c00) == 0x7c00 && (half & 0x3ff)) continue;  // NaN
    if (tb::floatToHalfBits(tb::halfBitsToFloat(half)) != half) ++failures;
  }
  CHECK(failures == 0);
}

TEST_CASE("bfloat16 known values and round trips", "[bucketing]") {
  CHECK(tb::floatToBfloat16Bits(1.0f) == 0x3f80);
  CHECK(tb::floatToBfloat16Bits(std::bit_cast<float>(0x3f808000u)) == 0x3f80);  // tie to even
  CHECK(tb::floatToBfloat16Bits(std::bit_cast<float>(0x3f818000u)) == 0x3f82);  // tie to even
  CHECK(tb::bfloat16BitsToFloat(0xc040) == -3.0f);
  CHECK(std::isnan(tb::bfloat16BitsToFloat(tb::floatToBfloat16Bits(NAN))));
}
