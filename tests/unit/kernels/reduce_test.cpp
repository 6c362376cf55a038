// reduce() for every dtype x op against model.hpp's independent reference, over counts, numbers of
// sources and destinations, alignments, aliasing and both kinds of stores (plain, streaming).
// Inputs are seeded, so failures reproduce.
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/kernels.hpp"
#include "tests/unit/kernels/model.hpp"
#include "tests/unit/kernels/reference.hpp"

namespace tutti::kernels::test {
namespace {

enum class Layout { kAligned, kUnaligned, kAliased };

struct Shape {
  size_t count;
  int nsrcs;
  int ndsts;
  Layout layout;
  Mode mode;
  Stores stores = Stores::kCached;
};

std::string describe(DataType dtype, RedOp op, const Shape& s) {
  std::ostringstream out;
  out << typeName(dtype) << " " << opName(op) << " count " << s.count << " nsrcs " << s.nsrcs
      << " ndsts " << s.ndsts << " layout " << static_cast<int>(s.layout) << " mode "
      << static_cast<int>(s.mode) << " streaming " << (s.stores == Stores::kStreaming);
  return out.str();
}

// Runs one reduce and returns the number of wrong elements (0 on success), checking every output,
// that the sources are intact and that nothing outside the buffers was written.
template <typename T>
int runCase(RedOp op, const Shape& s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const size_t bytes = s.count * sizeof(T);
  // Unaligned: each buffer a different number of bytes past a 64-byte boundary.
  auto offset = [&](int k) {
    return s.layout == Layout::kUnaligned ? size_t(1 + k % 7) : size_t{0};
  };

  std::vector<Buffer> srcBufs;
  std::vector<std::vector<T>> inputs(s.nsrcs, std::vector<T>(s.count));
  for (int k = 0; k < s.nsrcs; ++k) {
    srcBufs.emplace_back(bytes, offset(k));
    for (size_t i = 0; i < s.count; ++i) {
      inputs[k][i] = randomValue<T>(rng, op, s.mode);
      srcBufs[k].set(i, inputs[k][i]);
    }
  }
  std::vector<Buffer> dstBufs;
  for (int d = 0; d < s.ndsts; ++d) dstBufs.emplace_back(bytes, offset(s.nsrcs + d));

  std::vector<const void*> srcs;
  for (auto& b : srcBufs) srcs.push_back(b.data());
  std::vector<void*> dsts;
  for (auto& b : dstBufs) dsts.push_back(b.data());
  const bool aliased = s.layout == Layout::kAliased;
  if (aliased) dsts[0] = srcBufs[0].data();

  reduce(dsts.data(), s.ndsts, srcs.data(), s.nsrcs, s.count, dataTypeOf<T>(), op, s.stores);

  int bad = 0;
  std::vector<T> x(s.nsrcs);
  for (int d = 0; d < s.ndsts; ++d) {
    const Buffer& out = aliased && d == 0 ? srcBufs[0] : dstBufs[d];
    for (size_t i = 0; i < s.count; ++i) {
      for (int k = 0; k < s.nsrcs; ++k) x[k] = inputs[k][i];
      double want = 0;
      const T got = out.get<T>(i);
      if (!matches(got, x.data(), s.nsrcs, op, s.mode, &want) && ++bad <= 3) {
        UNSCOPED_INFO("dst " << d << " element " << i << ": got " << toDouble(got) << " want "
                             << want);
      }
    }
  }
  for (int k = aliased ? 1 : 0; k < s.nsrcs; ++k) {
    if (bytes > 0 && std::memcmp(srcBufs[k].data(), inputs[k].data(), bytes) != 0 && ++bad) {
      UNSCOPED_INFO("source " << k << " was modified");
    }
  }
  for (const auto& b : srcBufs) {
    if (!b.guardsIntact() && ++bad) UNSCOPED_INFO("write outside a source buffer");
  }
  for (const auto& b : dstBufs) {
    if (!b.guardsIntact() && ++bad) UNSCOPED_INFO("write outside a destination buffer");
  }
  return bad;
}

template <typename T>
void runGrid(const std::vector<Shape>& shapes) {
  uint64_t seed = 42;
  for (const RedOp op : kOps) {
    for (const Shape& s : shapes) {
      INFO(describe(dataTypeOf<T>(), op, s) << " seed " << seed);
      REQUIRE(runCase<T>(op, s, seed++) == 0);
    }
  }
}

template <typename T>
std::vector<Mode> modesOf() {
  if constexpr (std::is_integral_v<T>) {
    return {Mode::kRandom};  // integers are exact in any mode
  } else {
    return {Mode::kSmallInts, Mode::kRandom};
  }
}

}  // namespace

#define TUTTI_ALL_DTYPES \
  int8_t, uint8_t, int32_t, uint32_t, int64_t, uint64_t, float16, bfloat16, float, double

TEMPLATE_TEST_CASE("reduce: counts 0..1023 x nsrcs 1..5 x ndsts 1..2 x layouts",
                   "[kernels][reduce]", TUTTI_ALL_DTYPES) {
  std::vector<Shape> shapes;
  for (const size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1023}}) {
    for (int nsrcs = 1; nsrcs <= 5; ++nsrcs) {
      for (int ndsts = 1; ndsts <= 2; ++ndsts) {
        for (const Layout layout : {Layout::kAligned, Layout::kUnaligned, Layout::kAliased}) {
          for (const Mode mode : modesOf<TestType>()) {
            for (const Stores stores : {Stores::kCached, Stores::kStreaming})
              shapes.push_back({count, nsrcs, ndsts, layout, mode, stores});
          }
        }
      }
    }
  }
  runGrid<TestType>(shapes);
}

// Many of reduce()'s 256-element blocks and an odd tail; a larger count reaches no other code
// and costs minutes under the sanitizers.
TEMPLATE_TEST_CASE("reduce: 2^16 + 3 elements", "[kernels][reduce]", TUTTI_ALL_DTYPES) {
  const size_t count = (size_t{1} << 16) + 3;
  std::vector<Shape> shapes = {{count, 3, 2, Layout::kUnaligned, Mode::kRandom},
                               {count, 2, 1, Layout::kAliased, Mode::kRandom},
                               {count, 2, 2, Layout::kAligned, Mode::kRandom, Stores::kStreaming},
                               {count, 3, 1, Layout::kAliased, Mode::kRandom, Stores::kStreaming}};
  runGrid<TestType>(shapes);
}

}  // namespace tutti::kernels::test
