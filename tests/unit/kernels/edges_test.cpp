// The cases a random grid may miss: NaN and inf, integer wrap-around at the limits, half types
// rounded once, avgFinish's truncation, copy, and the names and sizes of the enums.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/half.hpp"
#include "kernels/kernels.hpp"
#include "tests/unit/kernels/model.hpp"
#include "tests/unit/kernels/reference.hpp"

namespace tutti::kernels::test {
namespace {

// Reduces one element per source: srcs {a, b, ...} -> result.
template <typename T>
T reduceOne(std::initializer_list<T> values, RedOp op) {
  std::vector<T> in(values);
  std::vector<const void*> srcs;
  for (const T& v : in) srcs.push_back(&v);
  T out;
  void* dst = &out;
  reduce(&dst, 1, srcs.data(), static_cast<int>(srcs.size()), 1, dataTypeOf<T>(), op);
  return out;
}

template <typename T>
T fromDouble(double v) {
  if constexpr (kIsHalf<T>) {
    return T::fromBits(roundTo(v, halfFormat<T>()));
  } else {
    return static_cast<T>(v);
  }
}

}  // namespace

TEST_CASE("names, sizes and validity of dtypes and ops", "[kernels]") {
  const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
  const char* names[] = {"int8",   "uint8",   "int32",    "uint32",  "int64",
                         "uint64", "float16", "bfloat16", "float32", "float64"};
  for (int t = 0; t < kNumDataTypes; ++t) {
    const auto dtype = static_cast<DataType>(t);
    CHECK(isValid(dtype));
    CHECK(typeSize(dtype) == sizes[t]);
    CHECK(std::string(typeName(dtype)) == names[t]);
  }
  const char* ops[] = {"sum", "prod", "min", "max", "avg"};
  for (int o = 0; o < kNumRedOps; ++o) {
    CHECK(isValid(static_cast<RedOp>(o)));
    CHECK(std::string(opName(static_cast<RedOp>(o))) == ops[o]);
  }
  CHECK_FALSE(isValid(static_cast<DataType>(kNumDataTypes)));
  CHECK_FALSE(isValid(static_cast<DataType>(-1)));
  CHECK_FALSE(isValid(static_cast<RedOp>(kNumRedOps)));
  CHECK_FALSE(isValid(static_cast<RedOp>(-1)));
  CHECK(typeSize(static_cast<DataType>(kNumDataTypes)) == 0);
  CHECK(std::string(typeName(static_cast<DataType>(99))) == "invalid");
  CHECK(std::string(opName(static_cast<RedOp>(99))) == "invalid");
}

TEMPLATE_TEST_CASE("NaN in any source gives NaN for every op", "[kernels][nan]", float16, bfloat16,
                   float, double) {
  using T = TestType;
  std::mt19937_64 rng(7);
  const T nan = fromDouble<T>(std::numeric_limits<double>::quiet_NaN());
  const size_t count = 37;  // spans the vector width and a scalar tail
  for (const RedOp op : kOps) {
    for (int nsrcs = 1; nsrcs <= 4; ++nsrcs) {
      for (int where = 0; where < nsrcs; ++where) {  // NaN first, in the middle and last
        std::vector<std::vector<T>> in(nsrcs, std::vector<T>(count));
        for (auto& src : in) {
          for (auto& v : src) v = randomValue<T>(rng, RedOp::kSum, Mode::kSmallInts);
        }
        for (size_t i = 0; i < count; i += 3) in[where][i] = nan;
        std::vector<const void*> srcs;
        for (auto& src : in) srcs.push_back(src.data());
        std::vector<T> out(count);
        void* dst = out.data();
        reduce(&dst, 1, srcs.data(), nsrcs, count, dataTypeOf<T>(), op);
        for (size_t i = 0; i < count; ++i) {
          INFO(opName(op) << " nsrcs " << nsrcs << " NaN in source " << where << " element " << i);
          CHECK(std::isnan(toDouble(out[i])) == (i % 3 == 0));
        }
      }
    }
  }
}

TEMPLATE_TEST_CASE("inf follows IEEE", "[kernels][inf]", float16, bfloat16, float, double) {
  using T = TestType;
  const double inf = std::numeric_limits<double>::infinity();
  auto r = [](double a, double b, RedOp op) {
    return toDouble(reduceOne<T>({fromDouble<T>(a), fromDouble<T>(b)}, op));
  };
  CHECK(std::isnan(r(inf, -inf, RedOp::kSum)));
  CHECK(std::isnan(r(-inf, inf, RedOp::kAvg)));
  CHECK(std::isnan(r(0.0, inf, RedOp::kProd)));
  CHECK(r(inf, 5.0, RedOp::kSum) == inf);
  CHECK(r(-3.0, inf, RedOp::kProd) == -inf);
  CHECK(r(inf, 5.0, RedOp::kMax) == inf);
  CHECK(r(5.0, inf, RedOp::kMax) == inf);
  CHECK(r(-inf, 5.0, RedOp::kMin) == -inf);
  CHECK(r(5.0, -inf, RedOp::kMin) == -inf);
  CHECK(r(inf, 5.0, RedOp::kMin) == 5.0);
  CHECK(r(-inf, 5.0, RedOp::kMax) == 5.0);
}

TEST_CASE("half types accumulate in float and round once", "[kernels][half]") {
  // Rounded after each step, 2048 + 1 -> 2048 (tie to even) twice; rounded once, 2050 is exact.
  CHECK(toDouble(reduceOne<float16>({float16(2048.0f), float16(1.0f), float16(1.0f)},
                                    RedOp::kSum)) == 2050.0);
  CHECK(toDouble(reduceOne<bfloat16>({bfloat16(256.0f), bfloat16(1.0f), bfloat16(1.0f)},
                                     RedOp::kSum)) == 258.0);
  // 65504 + 65504 - 65504 overflows half in the middle, not in float.
  CHECK(toDouble(reduceOne<float16>({float16(65504.0f), float16(65504.0f), float16(-65504.0f)},
                                    RedOp::kSum)) == 65504.0);
  CHECK(reduceOne<float16>({float16(65504.0f), float16(65504.0f)}, RedOp::kSum).bits == 0x7c00);
}

TEST_CASE("integers wrap around at their limits", "[kernels][int]") {
  CHECK(reduceOne<int8_t>({127, 1}, RedOp::kSum) == -128);
  CHECK(reduceOne<int8_t>({-128, -1}, RedOp::kSum) == 127);
  CHECK(reduceOne<int8_t>({16, 16}, RedOp::kProd) == 0);
  CHECK(reduceOne<int8_t>({-128, -1}, RedOp::kProd) == -128);
  CHECK(reduceOne<int8_t>({-100, 3}, RedOp::kProd) == static_cast<int8_t>(-300 + 256 * 2));
  CHECK(reduceOne<uint8_t>({255, 1}, RedOp::kSum) == 0);
  CHECK(reduceOne<uint8_t>({255, 255}, RedOp::kProd) == 1);
  const int32_t i32max = std::numeric_limits<int32_t>::max();
  const int32_t i32min = std::numeric_limits<int32_t>::min();
  CHECK(reduceOne<int32_t>({i32max, 1}, RedOp::kSum) == i32min);
  CHECK(reduceOne<int32_t>({i32max, 2}, RedOp::kProd) == -2);
  CHECK(reduceOne<uint32_t>({65536u, 65536u}, RedOp::kProd) == 0u);
  const int64_t i64min = std::numeric_limits<int64_t>::min();
  CHECK(reduceOne<int64_t>({i64min, -1}, RedOp::kProd) == i64min);
  CHECK(reduceOne<int64_t>({i64min, -1}, RedOp::kSum) == std::numeric_limits<int64_t>::max());
  CHECK(reduceOne<uint64_t>({~uint64_t{0}, 2}, RedOp::kSum) == 1u);
  CHECK(reduceOne<uint64_t>({uint64_t{1} << 32, uint64_t{1} << 32}, RedOp::kProd) == 0u);
  // Signedness of comparisons.
  CHECK(reduceOne<uint64_t>({uint64_t{1} << 63, 1}, RedOp::kMax) == uint64_t{1} << 63);
  CHECK(reduceOne<int64_t>({-1, 1}, RedOp::kMin) == -1);
  CHECK(reduceOne<uint8_t>({200, 100}, RedOp::kMin) == 100);
  CHECK(reduceOne<int8_t>({-100, 100}, RedOp::kMax) == 100);
}

TEST_CASE("avgFinish divides, integers truncating toward zero", "[kernels][avg]") {
  auto avg = []<typename T>(T v, int divisor) {
    T out;
    avgFinish(&out, &v, 1, dataTypeOf<T>(), divisor);
    return out;
  };
  CHECK(avg(int32_t{-7}, 2) == -3);
  CHECK(avg(int32_t{7}, 2) == 3);
  CHECK(avg(int32_t{-8}, 3) == -2);
  CHECK(avg(int8_t{-128}, 1) == -128);
  CHECK(avg(int8_t{-128}, 200) == 0);  // the divisor does not fit in int8
  CHECK(avg(int8_t{100}, 200) == 0);
  CHECK(avg(int8_t{-128}, 3) == -42);
  CHECK(avg(uint8_t{255}, 2) == 127);
  CHECK(avg(uint8_t{255}, 256) == 0);
  CHECK(avg(std::numeric_limits<int64_t>::min(), 2) == std::numeric_limits<int64_t>::min() / 2);
  CHECK(avg(std::numeric_limits<uint64_t>::max(), 3) == 0x5555555555555555u);
  CHECK(avg(int64_t{-9}, 4) == -2);
  CHECK(avg(-7.0f, 2) == -3.5f);
  CHECK(avg(1.0, 3) == 1.0 / 3.0);
  CHECK(toDouble(avg(float16(-7.0f), 2)) == -3.5);
}

TEMPLATE_TEST_CASE("avgFinish over arrays: in place and unaligned", "[kernels][avg]", int8_t,
                   uint8_t, int32_t, uint32_t, int64_t, uint64_t, float16, bfloat16, float,
                   double) {
  using T = TestType;
  std::mt19937_64 rng(99);
  const size_t count = 1029;
  for (const int divisor : {1, 2, 3, 7, 200}) {
    for (const bool inPlace : {false, true}) {
      Buffer src(count * sizeof(T), 1);
      Buffer dst(count * sizeof(T), 3);
      std::vector<T> in(count);
      for (size_t i = 0; i < count; ++i) {
        in[i] = randomValue<T>(rng, RedOp::kMin, Mode::kRandom);  // any non-NaN value
        src.set(i, in[i]);
      }
      Buffer& out = inPlace ? src : dst;
      avgFinish(out.data(), src.data(), count, dataTypeOf<T>(), divisor);
      int bad = 0;
      for (size_t i = 0; i < count; ++i) {
        const T got = out.get<T>(i);
        bool ok;
        if constexpr (std::is_integral_v<T>) {
          // Truncation toward zero, from the magnitude: q = sign(v) * (|v| / d).
          using W = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
          const W v = in[i];
          if constexpr (std::is_signed_v<T>) {
            const uint64_t mag = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
            const uint64_t q = mag / static_cast<uint64_t>(divisor);
            ok = got == static_cast<T>(v < 0 ? 0 - q : q);
          } else {
            ok = got == static_cast<T>(v / static_cast<uint64_t>(divisor));
          }
        } else {
          // One correctly rounded division: exact through double (53 >= 2 * 24 + 2), and for
          // the half types through float as the kernels do (24 >= 2 * 11 + 2).
          const T want = fromDouble<T>(toDouble(in[i]) / divisor);
          ok = std::memcmp(&got, &want, sizeof got) == 0;
        }
        if (!ok && ++bad <= 3) UNSCOPED_INFO("element " << i << " divisor " << divisor);
      }
      CHECK(bad == 0);
      CHECK(src.guardsIntact());
      CHECK(dst.guardsIntact());
    }
  }
}

TEST_CASE("copy writes every destination, skips one that is the source", "[kernels][copy]") {
  for (const size_t bytes : {size_t{0}, size_t{1}, size_t{13}, size_t{4099}}) {
    Buffer src(bytes, 1);
    Buffer a(bytes, 2);
    Buffer b(bytes, 0);
    for (size_t i = 0; i < bytes; ++i) src.data()[i] = static_cast<unsigned char>(i * 7 + 1);
    void* dsts[] = {a.data(), src.data(), b.data()};
    copy(dsts, 3, src.data(), bytes);
    CHECK(std::memcmp(a.data(), src.data(), bytes) == 0);
    CHECK(std::memcmp(b.data(), src.data(), bytes) == 0);
    for (size_t i = 0; i < bytes; ++i) {
      REQUIRE(src.data()[i] == static_cast<unsigned char>(i * 7 + 1));
    }
    CHECK(a.guardsIntact());
    CHECK(b.guardsIntact());
    CHECK(src.guardsIntact());
  }
  copy(nullptr, 0, nullptr, 0);  // nothing to do, nothing touched
}

// Streaming stores write 16-byte pieces to a 16-byte aligned destination, the last bytes of an odd
// length plainly, and plain stores anywhere else: lengths around 16 at each offset from a
// boundary, against the source's bytes, with nothing written outside.
TEST_CASE("a streaming copy writes exactly the destination, at any alignment", "[kernels][copy]") {
  for (size_t offset = 0; offset < 17; ++offset) {
    for (const size_t bytes : {size_t{0}, size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{31},
                               size_t{48}, size_t{4099}}) {
      INFO("offset " << offset << " bytes " << bytes);
      Buffer src(bytes, (offset + 5) % 16);
      Buffer dst(bytes, offset);
      for (size_t i = 0; i < bytes; ++i) src.data()[i] = static_cast<unsigned char>(i * 13 + 7);
      void* dsts[] = {dst.data()};
      copy(dsts, 1, src.data(), bytes, Stores::kStreaming);
      CHECK(std::memcmp(dst.data(), src.data(), bytes) == 0);
      CHECK(dst.guardsIntact());
      CHECK(src.guardsIntact());
    }
  }
}

TEST_CASE("count 0 touches nothing, even through null pointers", "[kernels]") {
  void* dst = nullptr;
  const void* src = nullptr;
  for (int t = 0; t < kNumDataTypes; ++t) {
    for (const RedOp op : kOps) reduce(&dst, 1, &src, 1, 0, static_cast<DataType>(t), op);
    avgFinish(nullptr, nullptr, 0, static_cast<DataType>(t), 2);
  }
  SUCCEED();
}

}  // namespace tutti::kernels::test
