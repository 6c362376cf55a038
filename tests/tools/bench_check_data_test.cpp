// tutti-bench's check patterns: a correct all-reduce, computed here in the type's own arithmetic
// and in several orders, counts zero wrong elements; a corrupted one does not.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "bench/check_data.hpp"

using tutti::bench::CheckData;

namespace {

template <typename T>
T combine(T a, T b, tuttiRedOp_t op) {
  switch (op) {
    case tuttiProd: return static_cast<T>(a * b);
    case tuttiMin: return std::min(a, b);
    case tuttiMax: return std::max(a, b);
    default: return static_cast<T>(a + b);
  }
}

// The all-reduce of every rank's input, reduced in `order`, in T's arithmetic; avg divides last.
template <typename T>
std::vector<T> reduceAll(const CheckData& data, size_t count, int nranks, tuttiRedOp_t op,
                         const std::vector<int>& order) {
  std::vector<std::vector<T>> inputs(static_cast<size_t>(nranks), std::vector<T>(count));
  for (int r = 0; r < nranks; ++r) data.fillInput(inputs[static_cast<size_t>(r)].data(), count, r);
  std::vector<T> out = inputs[static_cast<size_t>(order[0])];
  for (size_t k = 1; k < order.size(); ++k) {
    const auto& in = inputs[static_cast<size_t>(order[k])];
    for (size_t i = 0; i < count; ++i) out[i] = combine(out[i], in[i], op);
  }
  if (op == tuttiAvg) {
    for (auto& v : out) v = static_cast<T>(v / nranks);  // integers truncate toward zero
  }
  return out;
}

template <typename T>
void checkType(tuttiDataType_t dtype) {
  std::mt19937 rng(7);
  for (int nranks : {1, 2, 3, 8, 17, 200}) {
    for (tuttiRedOp_t op : {tuttiSum, tuttiProd, tuttiMin, tuttiMax, tuttiAvg}) {
      CheckData data(dtype, op, nranks);
      const size_t count = 3 * data.period() + 5;
      std::vector<int> order(static_cast<size_t>(nranks));
      std::iota(order.begin(), order.end(), 0);
      for (int shuffle = 0; shuffle < 3; ++shuffle) {
        auto result = reduceAll<T>(data, count, nranks, op, order);
        INFO("nranks " << nranks << " op " << op);
        CHECK(data.countWrong(result.data(), count) == 0);
        std::shuffle(order.begin(), order.end(), rng);
      }
      INFO("nranks " << nranks << " op " << op << " size " << sizeof(T));
      auto result = reduceAll<T>(data, count, nranks, op, order);
      result[count / 2] = static_cast<T>(result[count / 2] + 1);
      CHECK(data.countWrong(result.data(), count) == 1);
      CheckData::fillPoison(result.data(), count * sizeof(T));
      CHECK(data.countWrong(result.data(), count) == static_cast<int64_t>(count));
    }
  }
}

}  // namespace

TEST_CASE("check patterns reduce exactly: integer types (wrap-around included)", "[bench]") {
  checkType<int8_t>(tuttiInt8);
  checkType<uint8_t>(tuttiUint8);
  checkType<int32_t>(tuttiInt32);
  checkType<uint32_t>(tuttiUint32);
  checkType<int64_t>(tuttiInt64);
  checkType<uint64_t>(tuttiUint64);
}

TEST_CASE("check patterns reduce exactly: float and double", "[bench]") {
  checkType<float>(tuttiFloat32);
  checkType<double>(tuttiFloat64);
}

TEST_CASE("check patterns stay exact in half and bfloat16", "[bench]") {
  // Inputs are small integers: decode the half/bfloat16 bits, reduce in float (exact for these
  // values, as every partial sum stays below the type's exact-integer limit), encode, compare.
  auto halfToFloat = [](uint16_t h) {
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    return e == 0 ? std::ldexp(static_cast<float>(m), -24)
                  : std::ldexp(static_cast<float>(1024 + m), e - 25);
  };
  auto floatToHalf = [](float f) -> uint16_t {  // exact small integers only
    if (f == 0) return 0;
    int e = 0;
    float frac = std::frexp(f, &e);  // f = frac * 2^e, frac in [0.5, 1)
    auto mantissa = static_cast<uint16_t>(std::ldexp(frac, 11) - 1024);
    return static_cast<uint16_t>(((e - 1 + 15) << 10) | mantissa);
  };
  auto bfToFloat = [](uint16_t b) {
    uint32_t bits = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  };
  auto floatToBf = [](float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    return static_cast<uint16_t>(bits >> 16);
  };
  for (tuttiDataType_t dtype : {tuttiFloat16, tuttiBfloat16}) {
    const bool half = dtype == tuttiFloat16;
    for (int nranks : {1, 2, 5, 100, 700, 3000}) {
      for (tuttiRedOp_t op : {tuttiSum, tuttiProd, tuttiMin, tuttiMax}) {
        CheckData data(dtype, op, nranks);
        const size_t count = data.period() + 3;
        std::vector<float> acc(count);
        std::vector<uint16_t> buf(count);
        int badInputs = 0, inexact = 0;
        for (int r = 0; r < nranks; ++r) {
          data.fillInput(buf.data(), count, r);
          for (size_t i = 0; i < count; ++i) {
            float v = half ? halfToFloat(buf[i]) : bfToFloat(buf[i]);
            badInputs += v != static_cast<float>(data.value(r, i));
            acc[i] = r == 0 ? v : combine(acc[i], v, op);
            // Every partial result is exact in the type: it survives a round trip.
            uint16_t rounded = half ? floatToHalf(acc[i]) : floatToBf(acc[i]);
            inexact += (half ? halfToFloat(rounded) : bfToFloat(rounded)) != acc[i];
          }
        }
        INFO("dtype " << dtype << " nranks " << nranks << " op " << op);
        CHECK(badInputs == 0);
        CHECK(inexact == 0);
        for (size_t i = 0; i < count; ++i) buf[i] = half ? floatToHalf(acc[i]) : floatToBf(acc[i]);
        CHECK(data.countWrong(buf.data(), count) == 0);
        buf[1] ^= 0x0400;  // a different value
        CHECK(data.countWrong(buf.data(), count) == 1);
      }
    }
  }
}
