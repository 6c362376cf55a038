// float16 / bfloat16 conversions (kernels/half.hpp) against the table-based reference: every bit
// pattern, every rounding tie, random floats of every kind.
#include "kernels/half.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include "tests/unit/kernels/reference.hpp"

namespace tutti::kernels::test {
namespace {

float fromBits32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

uint32_t toBits32(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// The code under test, per format.
struct Fp16 {
  static constexpr HalfFormat kFormat = kFp16;
  static float widen(uint16_t b) { return static_cast<float>(float16::fromBits(b)); }
  static uint16_t narrow(float f) { return float16(f).bits; }
};
struct Bf16 {
  static constexpr HalfFormat kFormat = kBf16;
  static float widen(uint16_t b) { return static_cast<float>(bfloat16::fromBits(b)); }
  static uint16_t narrow(float f) { return bfloat16(f).bits; }
};

bool isNanCode(uint16_t bits, HalfFormat f) {
  return (bits & f.expMask()) == f.expMask() && (bits & ((1u << f.mantBits) - 1)) != 0;
}

}  // namespace

TEMPLATE_TEST_CASE("every 16-bit pattern widens exactly and narrows back", "[kernels][half]", Fp16,
                   Bf16) {
  const HalfFormat f = TestType::kFormat;
  int bad = 0;
  for (uint32_t b = 0; b < 65536; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    const double ref = decode(bits, f);
    const float got = TestType::widen(bits);
    const uint16_t back = TestType::narrow(got);
    bool ok;
    if (std::isnan(ref)) {
      // NaN stays NaN with its sign and payload; only a signalling NaN comes back changed, quiet.
      const auto quietBit = static_cast<uint16_t>(1u << (f.mantBits - 1));
      ok = std::isnan(got) && std::signbit(got) == ((bits & 0x8000) != 0) &&
           back == (bits | quietBit);
    } else {
      ok =
          static_cast<double>(got) == ref && std::signbit(got) == std::signbit(ref) && back == bits;
    }
    if (!ok && ++bad <= 5) {
      UNSCOPED_INFO("bits 0x" << std::hex << b << " widened " << got << " back 0x" << back);
    }
  }
  REQUIRE(bad == 0);
}

TEMPLATE_TEST_CASE("narrowing rounds to nearest and ties to even", "[kernels][half]", Fp16, Bf16) {
  const HalfFormat f = TestType::kFormat;
  int bad = 0;
  auto expect = [&](float x, uint16_t want) {
    const uint16_t got = TestType::narrow(x);
    if (got != want && ++bad <= 5) {
      UNSCOPED_INFO("x " << x << " (0x" << std::hex << toBits32(x) << ") got 0x" << got
                         << " want 0x" << want);
    }
  };
  for (uint32_t c = 0; c <= f.maxFinite(); ++c) {
    const double lo = decode(static_cast<uint16_t>(c), f);
    const double hi = c == f.maxFinite() ? beyondMax(f) : decode(static_cast<uint16_t>(c + 1), f);
    const auto mid = static_cast<float>((lo + hi) / 2);
    REQUIRE(static_cast<double>(mid) == (lo + hi) / 2);  // the tie is exact in float
    const auto even = static_cast<uint16_t>(c % 2 == 0 ? c : c + 1);
    for (const uint16_t sign : {uint16_t{0}, uint16_t{0x8000}}) {
      const float s = sign ? -1.0f : 1.0f;
      expect(s * mid, static_cast<uint16_t>(sign | even));
      expect(s * std::nextafter(mid, 0.0f), static_cast<uint16_t>(sign | c));
      expect(s * std::nextafter(mid, INFINITY), static_cast<uint16_t>(sign | (c + 1)));
    }
  }
  REQUIRE(bad == 0);
}

TEMPLATE_TEST_CASE("narrowing random floats of every kind matches the reference", "[kernels][half]",
                   Fp16, Bf16) {
  const HalfFormat f = TestType::kFormat;
  std::mt19937 rng(1234);
  int bad = 0;
  for (int i = 0; i < 200000; ++i) {
    // Half of the draws uniform over all bit patterns, half inside the format's own range.
    uint32_t u = static_cast<uint32_t>(rng());
    if (i % 2) u = (u & 0x807fffffu) | ((100u + rng() % 56u) << 23);
    const float x = fromBits32(u);
    const uint16_t got = TestType::narrow(x);
    const uint16_t want = roundTo(static_cast<double>(x), f);
    // The two references (table search and scaled rounding) must agree as well.
    const bool ok = std::isnan(x) ? isNanCode(got, f) && (got >> 15) == (u >> 31)
                                  : got == want && decode(got, f) == roundToValue(x, f);
    if (!ok && ++bad <= 5) {
      UNSCOPED_INFO("x 0x" << std::hex << u << " got 0x" << got << " want 0x" << want);
    }
  }
  REQUIRE(bad == 0);
}

TEST_CASE("special values narrow as IEEE says", "[kernels][half]") {
  // Signalling and quiet NaNs stay NaN (a truncated payload must not become inf), sign kept.
  for (const uint32_t nan : {0x7f800001u, 0x7fc00000u, 0xff800001u, 0x7fffffffu}) {
    const uint16_t h = float16(fromBits32(nan)).bits;
    const uint16_t b = bfloat16(fromBits32(nan)).bits;
    CHECK((h & 0x7c00) == 0x7c00);
    CHECK((h & 0x03ff) != 0);
    CHECK((b & 0x7f80) == 0x7f80);
    CHECK((b & 0x007f) != 0);
    CHECK((h >> 15) == (nan >> 31));
    CHECK((b >> 15) == (nan >> 31));
  }
  CHECK(float16(INFINITY).bits == 0x7c00);
  CHECK(float16(-INFINITY).bits == 0xfc00);
  CHECK(bfloat16(INFINITY).bits == 0x7f80);
  CHECK(bfloat16(-INFINITY).bits == 0xff80);
  CHECK(float16(65504.0f).bits == 0x7bff);
  CHECK(float16(65519.996f).bits == 0x7bff);
  CHECK(float16(65520.0f).bits == 0x7c00);  // the tie above the largest half goes to inf
  CHECK(float16(1e10f).bits == 0x7c00);
  CHECK(float16(-1e10f).bits == 0xfc00);
  CHECK(bfloat16(3.4028235e38f).bits == 0x7f80);  // FLT_MAX rounds up past bf16's largest
  CHECK(float16(0x1p-24f).bits == 0x0001);
  CHECK(float16(0x1p-25f).bits == 0x0000);         // tie between 0 and the smallest: even is 0
  CHECK(float16(0x1.8p-24f).bits == 0x0002);       // tie between 1 and 2 ulps: even is 2
  CHECK(float16(-0x1p-26f).bits == 0x8000);        // -0 keeps its sign
  CHECK(float16(0x1p-149f).bits == 0x0000);        // float subnormal
  CHECK(bfloat16(0x1p-149f).bits == 0x0000);       // far below the smallest bf16, 2^-133
  CHECK(bfloat16(0x1p-133f).bits == 0x0001);       // bf16 subnormals exist
  CHECK(float16(1.0f + 0x1p-11f).bits == 0x3c00);  // tie 1 / 1+2^-10: even is 1
  CHECK(float16(1.0f + 0x1.8p-10f).bits == 0x3c02);
  CHECK(bfloat16(1.0f + 0x1p-8f).bits == 0x3f80);
  CHECK(bfloat16(1.0f + 0x1.8p-7f).bits == 0x3f82);
}

}  // namespace tutti::kernels::test
