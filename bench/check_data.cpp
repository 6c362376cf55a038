#include "bench/check_data.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <type_traits>

namespace tutti::bench {
namespace {

// The half types as storage only: the bench encodes small integers and decodes results.
struct Half {
  uint16_t bits;
};
struct Bfloat16 {
  uint16_t bits;
};

template <typename T>
constexpr bool kIsInteger = std::is_integral_v<T>;

// Fractional bits of the significand, and the largest integer below which all are exact.
template <typename T>
constexpr int kMantissaBits = std::is_same_v<T, Half>       ? 10
                              : std::is_same_v<T, Bfloat16> ? 7
                              : std::is_same_v<T, float>    ? 23
                                                            : 52;

template <typename T>
T encode(int64_t v) {  // v: a small non-negative integer (floats: below 2^(mantissa bits + 1))
  if constexpr (std::is_same_v<T, Half>) {
    if (v == 0) return Half{0};
    int e = 63 - __builtin_clzll(static_cast<uint64_t>(v));
    auto mantissa = static_cast<uint16_t>((static_cast<uint64_t>(v) << (10 - e)) - 1024);
    return Half{static_cast<uint16_t>(((e + 15) << 10) | mantissa)};
  } else if constexpr (std::is_same_v<T, Bfloat16>) {
    float f = static_cast<float>(v);
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    return Bfloat16{static_cast<uint16_t>(bits >> 16)};
  } else {
    return static_cast<T>(v);  // integers: modular
  }
}

template <typename T>
double decode(T x) {
  if constexpr (std::is_same_v<T, Half>) {
    int exponent = (x.bits >> 10) & 0x1f;
    int mantissa = x.bits & 0x3ff;
    double sign = (x.bits & 0x8000) ? -1.0 : 1.0;
    if (exponent == 0) return sign * std::ldexp(mantissa, -24);
    if (exponent == 31) return mantissa ? NAN : sign * INFINITY;
    return sign * std::ldexp(1024 + mantissa, exponent - 25);
  } else if constexpr (std::is_same_v<T, Bfloat16>) {
    uint32_t bits = static_cast<uint32_t>(x.bits) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  } else {
    return static_cast<double>(x);
  }
}

template <typename F>
void visitType(tuttiDataType_t dtype, F&& f) {
  switch (dtype) {
    case tuttiInt8: return f.template operator()<int8_t>();
    case tuttiUint8: return f.template operator()<uint8_t>();
    case tuttiInt32: return f.template operator()<int32_t>();
    case tuttiUint32: return f.template operator()<uint32_t>();
    case tuttiInt64: return f.template operator()<int64_t>();
    case tuttiUint64: return f.template operator()<uint64_t>();
    case tuttiFloat16: return f.template operator()<Half>();
    case tuttiBfloat16: return f.template operator()<Bfloat16>();
    case tuttiFloat32: return f.template operator()<float>();
    case tuttiFloat64: return f.template operator()<double>();
    default: throw std::invalid_argument("CheckData: invalid data type");
  }
}

// The expected element for an exact reduction result: T's own arithmetic for avg's division.
template <typename T>
T expectedInteger(int64_t exact, tuttiRedOp_t op, int nranks) {
  T wrapped = encode<T>(exact);
  if (op != tuttiAvg) return wrapped;
  if constexpr (std::is_signed_v<T>) {
    return static_cast<T>(static_cast<int64_t>(wrapped) / nranks);
  } else {
    return static_cast<T>(static_cast<uint64_t>(wrapped) / static_cast<uint64_t>(nranks));
  }
}

template <typename T>
int64_t countWrongTyped(const void* result, size_t count, size_t firstIndex,
                        const std::vector<int64_t>& exact, tuttiRedOp_t op, int nranks) {
  const size_t period = exact.size();
  std::vector<T> expectedInt(period);
  std::vector<double> expectedFloat(period);
  for (size_t p = 0; p < period; ++p) {
    if constexpr (kIsInteger<T>) {
      expectedInt[p] = expectedInteger<T>(exact[p], op, nranks);
    } else {
      expectedFloat[p] = static_cast<double>(exact[p]) / (op == tuttiAvg ? nranks : 1);
    }
  }
  const double ulp = std::ldexp(1.0, -kMantissaBits<T>);
  const auto* data = static_cast<const unsigned char*>(result);
  int64_t wrong = 0;
  for (size_t i = 0, p = firstIndex % period; i < count; ++i, p = (p + 1 == period ? 0 : p + 1)) {
    T got;
    std::memcpy(&got, data + i * sizeof(T), sizeof(T));
    if constexpr (kIsInteger<T>) {
      wrong += got != expectedInt[p];
    } else if (op == tuttiAvg) {
      double want = expectedFloat[p];
      wrong += !(std::fabs(decode(got) - want) <= std::fabs(want) * ulp);
    } else {
      wrong += decode(got) != expectedFloat[p];
    }
  }
  return wrong;
}

}  // namespace

CheckData::CheckData(tuttiDataType_t dtype, tuttiRedOp_t op, int nranks)
    : dtype_(dtype), op_(op), nranks_(nranks) {
  if (nranks < 1) throw std::invalid_argument("CheckData: nranks < 1");
  const auto n = static_cast<size_t>(nranks);
  switch (op) {
    case tuttiSum:
    case tuttiAvg: {
      int64_t exactLimit = 0;  // 0: no limit (integer types)
      visitType(dtype, [&]<typename T>() {
        if constexpr (!kIsInteger<T>) exactLimit = int64_t{1} << (kMantissaBits<T> + 1);
      });
      if (exactLimit > 0 && 3 * static_cast<int64_t>(n) > exactLimit) {
        stride_ =
            (3 * n + static_cast<size_t>(exactLimit) - 4) / static_cast<size_t>(exactLimit - 3);
      }
      period_ = 4 * stride_;
      break;
    }
    case tuttiProd: period_ = 2 * n; break;
    case tuttiMin:
    case tuttiMax: period_ = 16; break;
    default: throw std::invalid_argument("CheckData: invalid reduction op");
  }
  exact_.resize(period_);
  for (size_t p = 0; p < period_; ++p) {
    int64_t acc = value(0, p);
    for (int r = 1; r < nranks; ++r) {
      int64_t v = value(r, p);
      switch (op) {
        case tuttiProd: acc *= v; break;
        case tuttiMin: acc = std::min(acc, v); break;
        case tuttiMax: acc = std::max(acc, v); break;
        default: acc += v; break;
      }
    }
    exact_[p] = acc;
  }
}

int64_t CheckData::value(int rank, size_t index) const {
  const auto r = static_cast<size_t>(rank);
  const size_t p = index % period_;
  switch (op_) {
    case tuttiProd: return p == r ? 2 : 1;
    case tuttiMin:
    case tuttiMax: return static_cast<int64_t>((7 * r + 3 * p) % 16);
    default:
      if (stride_ > 1 && (r + p) % stride_ != 0) return 0;
      return static_cast<int64_t>((r + 3 * p) % 4);
  }
}

void CheckData::fillInput(void* buffer, size_t count, int rank) const {
  visitType(dtype_, [&]<typename T>() {
    std::vector<T> table(period_);
    for (size_t p = 0; p < period_; ++p) table[p] = encode<T>(value(rank, p));
    auto* out = static_cast<unsigned char*>(buffer);
    for (size_t i = 0, p = 0; i < count; ++i, p = (p + 1 == period_ ? 0 : p + 1)) {
      std::memcpy(out + i * sizeof(T), &table[p], sizeof(T));
    }
  });
}

void CheckData::fillPoison(void* buffer, size_t bytes) {
  std::memset(buffer, 0xff, bytes);
}

int64_t CheckData::countWrong(const void* result, size_t count, size_t firstIndex,
                              int source) const {
  if (source == kReduced) {
    int64_t wrong = 0;
    visitType(dtype_, [&]<typename T>() {
      wrong = countWrongTyped<T>(result, count, firstIndex, exact_, op_, nranks_);
    });
    return wrong;
  }
  std::vector<int64_t> copied(period_);  // a copy is exact: compared as max's results are
  for (size_t p = 0; p < period_; ++p) copied[p] = value(source, p);
  int64_t wrong = 0;
  visitType(dtype_, [&]<typename T>() {
    wrong = countWrongTyped<T>(result, count, firstIndex, copied, tuttiMax, nranks_);
  });
  return wrong;
}

}  // namespace tutti::bench
