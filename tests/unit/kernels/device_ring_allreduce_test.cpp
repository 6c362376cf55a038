// The device protocol's ring all-reduce (kernels/device/), run by CPU threads standing in for
// thread blocks (device_ring.hpp), against model.hpp's independent reference: every dtype and op,
// Simple and LL, 1-8 ranks, 1-4 channels, counts 0, 1, primes and not divisible by ranks x
// channels, in and out of place, aligned and not; FIFOs that wrap around many times and resume
// across operations. Inputs are seeded; a failure prints its case.
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/ops.hpp"
#include "tests/unit/kernels/device_ring.hpp"
#include "tests/unit/kernels/model.hpp"
#include "tests/unit/kernels/reference.hpp"

namespace tutti::kernels::test {
namespace {

// Small slots, so that a few thousand elements take many chunks and sections.
constexpr uint32_t kSlots = 4;
constexpr uint32_t kSlotBytes = 96;

enum class Protocol { kSimple, kLL };

struct Case {
  Protocol protocol;
  int nranks;
  int nchannels;
  size_t count;
  bool inPlace;
  bool aligned;  // else each rank's buffers start a few elements past a 64-byte boundary
  uint64_t seed;
  int teamSize = 1;  // threads per rank and channel (a thread block's, on the GPU)
};

std::string describe(DataType dtype, RedOp op, const Case& c) {
  std::ostringstream out;
  out << (c.protocol == Protocol::kSimple ? "Simple " : "LL ") << typeName(dtype) << " "
      << opName(op) << " ranks " << c.nranks << " channels " << c.nchannels << " count " << c.count
      << (c.inPlace ? " in place" : " out of place") << (c.aligned ? " aligned" : " unaligned")
      << " seed " << c.seed << " team " << c.teamSize;
  return out.str();
}

// One all-reduce on `ring`; returns the number of wrong elements, checking every rank's output
// against the reference, that all ranks hold the same bits, that out-of-place sources are intact
// and that nothing outside the buffers was written. Floating-point inputs are small integers, so
// the result is exact in the ring's order of reduction.
template <typename T, typename Op>
int runCase(DeviceRing& ring, RedOp op, const Case& c) {
  std::mt19937_64 rng(c.seed);
  const int n = c.nranks;
  const size_t bytes = c.count * sizeof(T);
  std::vector<std::vector<T>> inputs(n, std::vector<T>(c.count));
  std::vector<Buffer> srcBufs, dstBufs;
  std::vector<const T*> srcs;
  std::vector<T*> dsts;
  for (int r = 0; r < n; ++r) {
    const size_t offset = c.aligned ? 0 : sizeof(T) * static_cast<size_t>(1 + r % 3);
    srcBufs.emplace_back(bytes, offset);
    dstBufs.emplace_back(bytes, offset);
    for (size_t i = 0; i < c.count; ++i) {
      inputs[r][i] = ringInput<T>(rng, op);
      srcBufs[r].set(i, inputs[r][i]);
    }
    Buffer& out = c.inPlace ? srcBufs[r] : dstBufs[r];
    srcs.push_back(reinterpret_cast<const T*>(srcBufs[r].data()));
    dsts.push_back(reinterpret_cast<T*>(out.data()));
  }

  const auto status = c.protocol == Protocol::kSimple
                          ? ring.allReduce<device::Simple, T, Op>(srcs, dsts, c.count)
                          : ring.allReduce<device::LL, T, Op>(srcs, dsts, c.count);
  for (const auto s : status) REQUIRE(s == device::Status::kOk);

  int bad = 0;
  std::vector<T> x(n);
  for (int r = 0; r < n; ++r) {
    const Buffer& out = c.inPlace ? srcBufs[r] : dstBufs[r];
    CHECK(out.guardsIntact());
    CHECK(srcBufs[r].guardsIntact());
    for (size_t i = 0; i < c.count; ++i) {
      for (int k = 0; k < n; ++k) x[k] = inputs[k][i];
      double want = 0;
      const T got = out.get<T>(i);
      const T first = (c.inPlace ? srcBufs[0] : dstBufs[0]).get<T>(i);
      const bool same = std::memcmp(&got, &first, sizeof(T)) == 0;
      if ((!matches(got, x.data(), n, op, Mode::kSmallInts, &want) || !same) && ++bad <= 3) {
        UNSCOPED_INFO("rank " << r << " element " << i << ": got " << toDouble(got) << " want "
                              << want << (same ? "" : " (differs from rank 0)"));
      }
      const T kept = srcBufs[r].get<T>(i);
      if (!c.inPlace && std::memcmp(&kept, &inputs[r][i], sizeof(T)) != 0 && ++bad <= 3) {
        UNSCOPED_INFO("rank " << r << " source element " << i << " changed");
      }
    }
  }
  return bad;
}

int runCase(DeviceRing& ring, DataType dtype, RedOp op, const Case& c) {
  int bad = 0;
  visitType(dtype, [&]<typename T>() {
    visitOp(op, [&]<typename Op>() { bad = runCase<T, Op>(ring, op, c); });
  });
  return bad;
}

void check(DataType dtype, RedOp op, const Case& c) {
  INFO(describe(dtype, op, c));
  DeviceRing ring(c.nranks, c.nchannels, kSlots, kSlotBytes);
  ring.setTeamSize(c.teamSize);
  CHECK(runCase(ring, dtype, op, c) == 0);
}

TEST_CASE("device ring all-reduce: every dtype and op, Simple and LL, random shapes") {
  std::mt19937_64 rng(20261202);
  const size_t counts[] = {0, 1, 2, 3, 7, 13, 97, 257, 1021};
  for (const Protocol protocol : {Protocol::kSimple, Protocol::kLL}) {
    for (const DataType dtype : kTypes) {
      for (const RedOp op : kOps) {
        for (int k = 0; k < 2; ++k) {
          const Case c{protocol,
                       static_cast<int>(1 + rng() % 8),
                       static_cast<int>(1 + rng() % 4),
                       k == 0 ? counts[rng() % std::size(counts)] : rng() % 3000,
                       rng() % 2 == 0,
                       rng() % 2 == 0,
                       rng()};
          check(dtype, op, c);
        }
      }
    }
  }
}

TEST_CASE("device ring all-reduce: 1-8 ranks x 1-4 channels") {
  // 4099 is prime: never divisible by ranks x channels.
  for (const Protocol protocol : {Protocol::kSimple, Protocol::kLL}) {
    for (int nranks = 1; nranks <= 8; ++nranks) {
      for (int nchannels = 1; nchannels <= 4; ++nchannels) {
        for (const size_t count : {size_t{1}, size_t{4099}}) {
          const Case c{protocol, nranks, nchannels, count, false, true, 7u * nranks + nchannels};
          check(DataType::kFloat32, RedOp::kSum, c);
        }
      }
    }
  }
}

TEST_CASE("device ring all-reduce: several threads per channel, as a block's") {
  for (const Protocol protocol : {Protocol::kSimple, Protocol::kLL}) {
    for (const int team : {2, 3}) {
      for (const size_t count : {size_t{1}, size_t{4099}}) {
        const Case c{protocol, 4, 2, count, count == 1, true, 11u * team, team};
        check(DataType::kFloat32, RedOp::kSum, c);
        check(DataType::kFloat16, RedOp::kMax, c);
      }
    }
  }
}

TEST_CASE("device ring all-reduce: FIFOs wrap around and resume across operations") {
  constexpr uint32_t kFewSlots = 2;
  for (const Protocol protocol : {Protocol::kSimple, Protocol::kLL}) {
    DeviceRing ring(4, 2, kFewSlots, 64);
    for (uint64_t seed = 1; seed <= 2; ++seed) {
      const Case c{protocol, 4, 2, 20011, seed == 2, true, seed};
      INFO(describe(DataType::kInt32, RedOp::kSum, c));
      CHECK(runCase(ring, DataType::kInt32, RedOp::kSum, c) == 0);
    }
    // Each FIFO carried hundreds of slots through its two.
    for (int r = 0; r < 4; ++r) CHECK(ring.published(ring.fifo(1, r)) > 100 * kFewSlots);
  }
}

TEST_CASE("alignedSplit: every element once, in order, parts start aligned") {
  for (size_t total : {0, 1, 5, 16, 17, 100, 4099}) {
    for (size_t parts = 1; parts <= 9; ++parts) {
      for (size_t align : {1, 2, 4, 8, 16}) {
        size_t next = 0;
        for (size_t part = 0; part < parts; ++part) {
          const device::Range r = device::alignedSplit(total, parts, part, align);
          INFO("total " << total << " parts " << parts << " part " << part << " align " << align);
          REQUIRE(r.offset == next);
          if (r.count > 0) CHECK(r.offset % align == 0);
          next += r.count;
        }
        CHECK(next == total);
      }
    }
  }
}

}  // namespace
}  // namespace tutti::kernels::test
