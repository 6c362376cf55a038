// The device protocol's other collectives (kernels/device/): ring reduce-scatter and allgather,
// broadcast and reduce as chains from and to a root, and the tree all-reduce, run by CPU threads
// standing in for thread blocks (device_ring.hpp) against model.hpp's independent reference
// (device_case.hpp): Simple and LL, every dtype (and every op where they reduce), 1-8 ranks, 1-3
// channels, counts 0, 1, primes and random, in and out of place with the C API's layouts, aligned
// and not, every root, rings in rank order and not (blocks and roots are ranks' wherever they sit).
// The full product is too slow for the unit suite: it is sampled with a fixed seed, and each
// collective also sweeps every ranks x channels shape.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "tests/unit/kernels/device_case.hpp"

namespace tutti::kernels::test {
namespace {

struct Schedule {
  Collective collective;
  Algorithm algorithm;
};
constexpr Schedule kSchedules[] = {{Collective::kReduceScatter, Algorithm::kRing},
                                   {Collective::kAllGather, Algorithm::kRing},
                                   {Collective::kBroadcast, Algorithm::kRing},
                                   {Collective::kReduce, Algorithm::kRing},
                                   {Collective::kAllReduce, Algorithm::kTree}};

Case sampled(std::mt19937_64& rng, Protocol protocol, Schedule s, size_t count) {
  Case c{protocol,
         static_cast<int>(1 + rng() % 8),
         static_cast<int>(1 + rng() % 3),
         count,
         rng() % 2 == 0,
         rng() % 2 == 0,
         rng()};
  c.collective = s.collective;
  c.algorithm = s.algorithm;
  c.root = static_cast<int>(rng() % static_cast<uint64_t>(c.nranks));
  return c;
}

TEST_CASE("device collectives: every dtype and op, Simple and LL, sampled shapes") {
  std::mt19937_64 rng(20261203);
  const size_t counts[] = {0, 1, 2, 3, 7, 13, 97, 257};
  for (const Schedule s : kSchedules) {
    for (const Protocol protocol : {Protocol::kSimple, Protocol::kLL}) {
      for (const DataType dtype : kTypes) {
        for (const RedOp op : kOps) {
          if (!reduces(s.collective) && op != RedOp::kSum) continue;  // the op is unused
          for (int k = 0; k < 2; ++k) {
            // Reduce-scatter and allgather move nranks blocks of count.
            const size_t count = k == 0 ? counts[rng() % std::size(counts)] : rng() % 1500;
            check(dtype, op, sampled(rng, protocol, s, count));
          }
        }
      }
    }
  }
}

TEST_CASE("device collectives: 1-8 ranks x 1-3 channels, every root") {
  // 1031 is prime: never divisible by ranks x channels.
  for (const Schedule s : kSchedules) {
    for (const Protocol protocol : {Protocol::kSimple, Protocol::kLL}) {
      for (int nranks = 1; nranks <= 8; ++nranks) {
        for (int nchannels = 1; nchannels <= 3; ++nchannels) {
          Case c{protocol,
                 nranks,
                 nchannels,
                 1031,
                 nranks % 2 == 0,
                 nchannels != 2,
                 13u * nranks + nchannels};
          c.collective = s.collective;
          c.algorithm = s.algorithm;
          c.root = (nranks + nchannels) % nranks;
          check(DataType::kFloat32, RedOp::kSum, c);
        }
      }
    }
  }
}

// Where a ring's order is rank order turned around (each rank's next is rank + 1), positions
// and ranks differ only by a shift; a test of the permutation must avoid it.
bool turnedRankOrder(const std::vector<int>& order) {
  const size_t n = order.size();
  for (size_t i = 0; i < n; ++i)
    if (order[(i + 1) % n] != (order[i] + 1) % static_cast<int>(n)) return false;
  return true;
}

// A ring of `nranks` that is no turn of rank order.
std::vector<int> shuffledRing(int nranks, std::mt19937_64& rng) {
  std::vector<int> order(static_cast<size_t>(nranks));
  std::iota(order.begin(), order.end(), 0);
  while (turnedRankOrder(order)) std::shuffle(order.begin(), order.end(), rng);
  return order;
}

TEST_CASE("device collectives: a ring not in rank order, as the runtime plans across hosts") {
  std::mt19937_64 rng(20261204);
  const Collective ringCollectives[] = {Collective::kAllReduce, Collective::kReduceScatter,
                                        Collective::kAllGather, Collective::kBroadcast,
                                        Collective::kReduce};
  for (const Collective collective : ringCollectives) {
    for (const Protocol protocol : {Protocol::kSimple, Protocol::kLL}) {
      for (int nranks = 3; nranks <= 8; ++nranks) {
        Case c{protocol, nranks, 1 + nranks % 3, 613, nranks % 2 == 1, true, rng()};
        c.collective = collective;
        c.root = static_cast<int>(rng() % static_cast<uint64_t>(nranks));
        c.orders = {shuffledRing(nranks, rng)};
        check(DataType::kInt32, RedOp::kSum, c);
      }
    }
  }
}

// NCCL's channels each run a ring of their own, planned from the GPUs' links: a channel's share of
// the data, its blocks and its root's place follow its own ring, whatever the others do.
TEST_CASE("device collectives: channels on different rings") {
  std::mt19937_64 rng(20261205);
  const Collective ringCollectives[] = {Collective::kAllReduce, Collective::kReduceScatter,
                                        Collective::kAllGather, Collective::kBroadcast,
                                        Collective::kReduce};
  for (const Collective collective : ringCollectives) {
    for (const Protocol protocol : {Protocol::kSimple, Protocol::kLL}) {
      for (int nranks = 3; nranks <= 8; nranks += 1 + nranks % 2) {
        Case c{protocol, nranks, 4, 1021, nranks % 2 == 0, true, rng()};
        c.collective = collective;
        c.root = static_cast<int>(rng() % static_cast<uint64_t>(nranks));
        // Three rings over four channels: channel 3 runs channel 0's again.
        c.orders = {shuffledRing(nranks, rng), shuffledRing(nranks, rng),
                    shuffledRing(nranks, rng)};
        check(DataType::kFloat32, RedOp::kMax, c);
      }
    }
  }
}

// A group's threads take units in batches (each thread several in flight) and what is left one at a
// time; unaligned buffers go one at a time throughout: both, with slots of several batches.
TEST_CASE("device collectives: several threads per channel, as a block's") {
  for (const Schedule s : kSchedules) {
    for (const Protocol protocol : {Protocol::kSimple, Protocol::kLL}) {
      for (const bool aligned : {true, false}) {
        Case c{protocol, 5, 2, 4999, false, aligned, 17, 3};
        c.collective = s.collective;
        c.algorithm = s.algorithm;
        c.root = 3;
        c.slotBytes = 1024;
        check(DataType::kBfloat16, RedOp::kMax, c);
        c.inPlace = true;
        check(DataType::kInt32, RedOp::kProd, c);
      }
    }
  }
}

}  // namespace
}  // namespace tutti::kernels::test
