// The casts of the fp16/bf16 compression hooks, end to end through the hook on a one-rank world
// (the sum of one rank and the division by 1 are exact, so what comes back is float -> 16 bits ->
// float). Expectations come from the kernels tests' reference (decoding by formula, rounding by
// scaling), not from kernels/half.hpp that the hooks use.
#include <bit>
#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "bucketing/comm_hook.hpp"
#include "tests/unit/bucketing/rank_threads.hpp"
#include "tests/unit/kernels/reference.hpp"

namespace tb = tutti::bucketing;
namespace tk = tutti::kernels::test;

namespace {

struct Fp16 {
  static constexpr tk::HalfFormat kFormat = tk::kFp16;
  static std::unique_ptr<tb::CommHook> hook() { return tb::fp16CompressHook(); }
};
struct Bf16 {
  static constexpr tk::HalfFormat kFormat = tk::kBf16;
  static std::unique_ptr<tb::CommHook> hook() { return tb::bf16CompressHook(); }
};

// The values after a float32 bucket holding them went through the hook.
template <typename Format>
std::vector<float> throughHook(std::vector<float> values) {
  const auto errors = tb::testing::onEveryRank(1, [&](tuttiComm_t comm, int) {
    Format::hook()->start(comm, values.data(), values.size(), tuttiFloat32)->wait();
  });
  REQUIRE(errors[0].empty());
  return values;
}

// Same value and sign (so -0 is not +0), or both NaN.
bool sameValue(float got, double want) {
  if (std::isnan(want)) return std::isnan(got);
  return static_cast<double>(got) == want && std::signbit(got) == std::signbit(want);
}

}  // namespace

TEMPLATE_TEST_CASE("every 16-bit value survives the compression hook", "[bucketing]", Fp16, Bf16) {
  const tk::HalfFormat f = TestType::kFormat;
  std::vector<float> values;
  for (uint32_t b = 0; b < 65536; ++b)
    values.push_back(static_cast<float>(tk::decodeFormula(static_cast<uint16_t>(b), f)));
  const std::vector<float> got = throughHook<TestType>(values);
  int bad = 0;
  for (uint32_t b = 0; b < 65536; ++b) {
    if (!sameValue(got[b], tk::decodeFormula(static_cast<uint16_t>(b), f)) && ++bad <= 5)
      UNSCOPED_INFO("bits 0x" << std::hex << b << " came back as " << got[b]);
  }
  CHECK(bad == 0);
}

TEMPLATE_TEST_CASE("the compression hook rounds to nearest even", "[bucketing]", Fp16, Bf16) {
  const tk::HalfFormat f = TestType::kFormat;
  const double maxFinite = tk::decodeFormula(f.maxFinite(), f);
  const double smallest = tk::decodeFormula(1, f);  // the smallest subnormal
  const double midBelowInf = (maxFinite + tk::beyondMax(f)) / 2;
  const float sNaN = std::bit_cast<float>(0x7f800001u);
  std::vector<float> values = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, sNaN,
                               // float's extremes, down to its subnormals
                               FLT_MAX, -FLT_MAX, FLT_MIN, 0x1p-149f, -0x1p-149f};
  const double edges[] = {
      maxFinite,
      midBelowInf,                                 // the tie above the largest: inf
      smallest / 2,                                // tie between 0 and the smallest: 0
      smallest * 1.5,                              // tie between 1 and 2 units: 2
      -smallest * 0.75,                            // nearer to -smallest than to -0
      smallest / 4,                                // underflows to 0
      1.0 + std::ldexp(1.0, -f.mantBits - 1),      // tie between 1 and its successor: 1
      1.0 + 3 * std::ldexp(1.0, -f.mantBits - 1),  // tie between the successor and the next: next
  };
  for (const double edge : edges) {
    REQUIRE(static_cast<double>(static_cast<float>(edge)) == edge);  // exact in float
    values.push_back(static_cast<float>(edge));
  }
  values.push_back(std::nextafter(static_cast<float>(midBelowInf), 0.0f));  // rounds to the largest
  // Uniform bit patterns (every kind of float) and floats of the format's own range.
  std::mt19937 rng(20240601);
  for (int i = 0; i < 100000; ++i) {
    uint32_t u = static_cast<uint32_t>(rng());
    if (i % 2) u = (u & 0x807fffffu) | ((100u + rng() % 56u) << 23);
    values.push_back(std::bit_cast<float>(u));
  }
  const std::vector<float> got = throughHook<TestType>(values);
  int bad = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    const double want = tk::roundToValue(static_cast<double>(values[i]), f);
    if (!sameValue(got[i], want) && ++bad <= 5) {
      UNSCOPED_INFO("x " << values[i] << " (0x" << std::hex << std::bit_cast<uint32_t>(values[i])
                         << ") came back as " << got[i] << ", want " << want);
    }
  }
  CHECK(bad == 0);
}
