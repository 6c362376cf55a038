// The device protocol's ring all-reduce (kernels/device/), run by CPU threads standing in for
// thread blocks (device_ring.hpp), against model.hpp's independent reference: every dtype and op,
// Simple and LL, 1-8 ranks, 1-4 channels, counts 0, 1, primes and not divisible by ranks x
// channels, in and out of place, aligned and not; FIFOs that wrap around many times and resume
// across operations. Inputs are seeded; a failure prints its case.
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>

#include "tests/unit/kernels/device_case.hpp"

namespace tutti::kernels::test {
namespace {

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
