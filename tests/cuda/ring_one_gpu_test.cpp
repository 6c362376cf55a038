// The ring collectives' kernels (kernels/cuda/collective_kernel.cu) on a real GPU: 2-4 ranks
// sharing it (one_gpu_ring.hpp); all-reduce, and reduce-scatter, allgather, broadcast and reduce
// with the C API's layouts and every root; every dtype and op, Simple and LL, 1 and 3 channels,
// seeded counts (0, 1, primes, random), in and out of place, aligned and not, checked bitwise
// against model.hpp's independent reference and across ranks, with guard bytes around every buffer;
// and the abort flag and the spin budget ending the kernels of a ring whose last rank never came.
// The same schedule runs on CPU threads in device_protocol_test; this is where the GPU's own memory
// model, the LL lines' vector accesses and the block barriers meet it.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <deque>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/ops.hpp"
#include "tests/cuda/one_gpu_ring.hpp"
#include "tests/unit/kernels/model.hpp"

namespace tutti::kernels::cuda::test {
namespace {

namespace model = tutti::kernels::test;
using namespace std::chrono_literals;

// Small slots, so that a few thousand elements take many chunks and the FIFOs wrap many times.
constexpr uint32_t kSlots = 4;
constexpr uint32_t kSlotBytes = 2048;
// One all-reduce here takes milliseconds; a minute means a hang, not a slow machine.
constexpr auto kLimit = std::chrono::milliseconds(60s);

// Bytes around each buffer that must keep their poison.
constexpr size_t kGuard = 256;
constexpr unsigned char kPoison = 0xCD;

struct Case {
  Protocol protocol;
  int nranks;
  int nchannels;
  size_t count;  // the C API's count
  bool inPlace;
  size_t offset;  // elements past a 256-byte boundary (nonzero: unaligned for 16-byte vectors)
  uint64_t seed;
  RingCollective collective = {Collective::kAllReduce, 0};
};

// model.hpp lists the collectives in cuda_kernels.hpp's order.
static_assert(static_cast<int>(model::Collective::kReduce) ==
              static_cast<int>(Collective::kReduce));
model::Collective modelOf(Collective c) {
  return static_cast<model::Collective>(static_cast<int>(c));
}

std::string describe(DataType dtype, RedOp op, const Case& c) {
  std::ostringstream out;
  out << model::collectiveName(modelOf(c.collective.collective)) << " root " << c.collective.root
      << (c.protocol == Protocol::kSimple ? " Simple " : " LL ") << typeName(dtype) << " "
      << opName(op) << " ranks " << c.nranks << " channels " << c.nchannels << " count " << c.count
      << (c.inPlace ? " in place" : " out of place") << " offset " << c.offset << " seed "
      << c.seed;
  return out.str();
}

// One rank's buffer in device memory, poisoned, with kGuard bytes on each side; `begin` is the
// first element's byte in the block.
struct GuardedBuffer {
  GuardedBuffer(size_t bytes, size_t offsetBytes)
      : begin(kGuard + offsetBytes), memory(begin + bytes + kGuard) {
    check(cudaMemset(memory.data(), kPoison, memory.bytes()), "cudaMemset(poison)");
  }
  unsigned char* data() const { return memory.data() + begin; }
  std::vector<unsigned char> copyBack() const {
    std::vector<unsigned char> out(memory.bytes());
    check(cudaMemcpy(out.data(), memory.data(), out.size(), cudaMemcpyDeviceToHost),
          "cudaMemcpy(to host)");
    return out;
  }
  size_t begin;
  DeviceBuffer memory;
};

// Every byte of `block` poisoned but [from, to).
bool poisonedBut(const std::vector<unsigned char>& block, size_t from, size_t to) {
  for (size_t i = 0; i < block.size(); ++i) {
    if ((i < from || i >= to) && block[i] != kPoison) return false;
  }
  return true;
}

// One collective on every rank of `ring`, with model.hpp's layouts (in place: one buffer); returns
// the number of wrong elements (each rank's output against the reference and, where every rank
// holds the same result, against rank 0's bits; sources unchanged) and checks that nothing
// outside the buffers' data was written and every channel ended kOk.
template <typename T, typename Op>
int runCase(OneGpuRing& ring, DataType dtype, RedOp op, const Case& c) {
  std::mt19937_64 rng(c.seed);
  const int n = c.nranks;
  const model::Collective coll = modelOf(c.collective.collective);
  const int root = c.collective.root;
  std::vector<model::BufferLayout> layouts;
  std::vector<std::vector<T>> inputs(n);
  std::deque<GuardedBuffer> sends, recvs;  // a deque: they cannot move
  for (int r = 0; r < n; ++r) {
    const model::BufferLayout l = model::layoutOf(coll, n, r, root, c.count);
    layouts.push_back(l);
    for (size_t i = 0; i < l.sendCount; ++i) inputs[r].push_back(model::ringInput<T>(rng, op));
    const size_t sendElems = c.inPlace ? std::max(l.sendCount, l.recvCount) : l.sendCount;
    sends.emplace_back(sendElems * sizeof(T), c.offset * sizeof(T));
    recvs.emplace_back(c.inPlace ? 0 : l.recvCount * sizeof(T), c.offset * sizeof(T));
    const size_t sendAt = c.inPlace ? l.sendOffset : 0;
    check(cudaMemcpy(sends[r].data() + sendAt * sizeof(T), inputs[r].data(),
                     l.sendCount * sizeof(T), cudaMemcpyHostToDevice),
          "cudaMemcpy(to device)");
  }
  for (int r = 0; r < n; ++r) {
    const size_t sendAt = c.inPlace ? layouts[r].sendOffset : 0;
    ring.launch(r, c.collective, sends[r].data() + sendAt * sizeof(T),
                (c.inPlace ? sends : recvs)[r].data(), c.count, dtype, op, c.protocol);
  }
  REQUIRE(ring.finishOrAbort(kLimit));
  for (int r = 0; r < n; ++r) {
    for (int ch = 0; ch < c.nchannels; ++ch) {
      // count 0 enqueues nothing: no kernel writes a status.
      CHECK(ring.status(r, ch) == (c.count == 0 ? OneGpuRing::kPending : device::Status::kOk));
    }
  }

  std::vector<std::vector<unsigned char>> sendBlocks, recvBlocks;
  for (int r = 0; r < n; ++r) {
    sendBlocks.push_back(sends[r].copyBack());
    recvBlocks.push_back(recvs[r].copyBack());
  }
  auto element = [&](const std::vector<unsigned char>& block, size_t begin, size_t i) {
    T v;
    std::memcpy(&v, block.data() + begin + i * sizeof(T), sizeof(T));
    return v;
  };
  const bool sameEverywhere =
      coll != model::Collective::kReduceScatter && coll != model::Collective::kReduce;
  int bad = 0;
  std::vector<T> x;
  for (int r = 0; r < n; ++r) {
    const model::BufferLayout& l = layouts[r];
    const size_t begin = sends[r].begin;
    const auto& out = c.inPlace ? sendBlocks[r] : recvBlocks[r];
    const auto& first = c.inPlace ? sendBlocks[0] : recvBlocks[0];
    const size_t outAt = c.inPlace ? l.recvOffset : 0;
    const size_t sendAt = c.inPlace ? l.sendOffset : 0;
    // Outside the data every byte keeps its poison: guard bytes, the rest of an in-place buffer,
    // a non-root's reduce output.
    const size_t outFrom = begin + outAt * sizeof(T);
    const size_t outTo = outFrom + (l.writes ? l.recvCount * sizeof(T) : 0);
    const size_t sendFrom = begin + sendAt * sizeof(T), sendTo = sendFrom + l.sendCount * sizeof(T);
    if (c.inPlace) {
      std::vector<unsigned char> masked = sendBlocks[r];
      for (size_t i = sendFrom; i < sendTo; ++i) masked[i] = kPoison;
      CHECK(poisonedBut(masked, outFrom, outTo));
    } else {
      CHECK(poisonedBut(sendBlocks[r], sendFrom, sendTo));
      CHECK(poisonedBut(recvBlocks[r], outFrom, outTo));
    }
    for (size_t j = 0; l.writes && j < l.recvCount; ++j) {
      x.clear();
      for (const model::Source& s : model::sourcesOf(coll, n, root, c.count, r, j)) {
        x.push_back(inputs[s.rank][s.index]);
      }
      double want = 0;
      const T got = element(out, begin, outAt + j);
      const T zero = element(first, sends[0].begin, outAt + j);
      const bool same = !sameEverywhere || std::memcmp(&got, &zero, sizeof(T)) == 0;
      if ((!model::matches(got, x.data(), static_cast<int>(x.size()), op, model::Mode::kSmallInts,
                           &want) ||
           !same) &&
          ++bad <= 3) {
        UNSCOPED_INFO("rank " << r << " element " << j << ": got " << model::toDouble(got)
                              << " want " << want << (same ? "" : " (differs from rank 0)"));
      }
    }
    // Sources unchanged but where the output overwrote them in place.
    for (size_t i = 0; i < l.sendCount; ++i) {
      const size_t at = sendAt + i;
      const bool overwritten = c.inPlace && l.writes && at >= outAt && at < outAt + l.recvCount;
      const T kept = element(sendBlocks[r], begin, at);
      if (!overwritten && std::memcmp(&kept, &inputs[r][i], sizeof(T)) != 0 && ++bad <= 3) {
        UNSCOPED_INFO("rank " << r << " source element " << i << " changed");
      }
    }
  }
  return bad;
}

// Runs the case on `ring` unless its blocks cannot all be resident (said, and skipped).
void checkCase(OneGpuRing& ring, DataType dtype, RedOp op, const Case& c) {
  INFO(describe(dtype, op, c));
  const std::string problem =
      coResidencyProblem(ring.shape(), c.collective.collective, dtype, op, c.protocol);
  if (!problem.empty()) {
    WARN("skipped, the ranks cannot run together: " << problem);
    return;
  }
  int bad = 0;
  visitType(dtype, [&]<typename T>() {
    visitOp(op, [&]<typename Op>() { bad = runCase<T, Op>(ring, dtype, op, c); });
  });
  CHECK(bad == 0);
}

TEST_CASE("ring on one GPU: every dtype and op, Simple and LL, 2-4 ranks, seeded counts") {
  std::mt19937_64 rng(20261202);
  const size_t counts[] = {0, 1, 2, 3, 13, 97, 1021, 4099};
  for (const Protocol protocol : {Protocol::kSimple, Protocol::kLL}) {
    for (int nranks = 2; nranks <= 4; ++nranks) {
      for (const int nchannels : {1, 3}) {
        // One ring for all of its cases: the FIFOs' counters carry over from one to the next.
        OneGpuRing ring({nranks, nchannels, kSlots, kSlotBytes});
        for (const DataType dtype : model::kTypes) {
          for (const RedOp op : model::kOps) {
            for (int k = 0; k < 2; ++k) {
              const Case c{
                  protocol,       nranks,
                  nchannels,      k == 0 ? counts[rng() % std::size(counts)] : rng() % 30000,
                  rng() % 2 == 0, rng() % 4,
                  rng()};
              checkCase(ring, dtype, op, c);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("ring collectives on one GPU: reduce-scatter, allgather, broadcast, reduce") {
  std::mt19937_64 rng(20261203);
  const size_t counts[] = {0, 1, 3, 13, 97, 1021};
  const Collective collectives[] = {Collective::kReduceScatter, Collective::kAllGather,
                                    Collective::kBroadcast, Collective::kReduce};
  for (const Protocol protocol : {Protocol::kSimple, Protocol::kLL}) {
    for (int nranks = 2; nranks <= 4; ++nranks) {
      for (const int nchannels : {1, 3}) {
        OneGpuRing ring({nranks, nchannels, kSlots, kSlotBytes});
        for (const Collective collective : collectives) {
          for (const DataType dtype : model::kTypes) {
            for (const RedOp op : model::kOps) {
              if (!model::reduces(modelOf(collective)) && op != RedOp::kSum) continue;
              Case c{protocol,
                     nranks,
                     nchannels,
                     rng() % 2 == 0 ? counts[rng() % std::size(counts)] : rng() % 10000,
                     rng() % 2 == 0,
                     rng() % 4,
                     rng()};
              c.collective = {collective, static_cast<int>(rng() % static_cast<uint64_t>(nranks))};
              checkCase(ring, dtype, op, c);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("ring on one GPU: millions of elements, 4 ranks x 4 channels") {
  for (const Protocol protocol : {Protocol::kSimple, Protocol::kLL}) {
    OneGpuRing ring({4, 4, kSlots, kSlotBytes});
    const size_t count = (size_t{1} << 22) + 15;
    checkCase(ring, DataType::kFloat32, RedOp::kSum, {protocol, 4, 4, count, false, 0, 1});
    checkCase(ring, DataType::kBfloat16, RedOp::kMax, {protocol, 4, 4, count, true, 1, 2});
  }
}

// Ranks 0 and 1 of a ring of 3 whose rank 2 never launches: their kernels cannot finish.
void launchWithoutLastRank(OneGpuRing& ring, const DeviceBuffer& buffer, Protocol protocol,
                           uint64_t spinBudget) {
  const size_t count = buffer.bytes() / 2 / sizeof(float);
  for (int r = 0; r < 2; ++r) {
    unsigned char* mine = buffer.data() + static_cast<size_t>(r) * count * sizeof(float);
    ring.launch(r, mine, mine, count, DataType::kFloat32, RedOp::kSum, protocol, spinBudget);
  }
}

TEST_CASE("ring on one GPU: the abort flag ends the kernels of a ring missing a rank") {
  for (const Protocol protocol : {Protocol::kSimple, Protocol::kLL}) {
    INFO((protocol == Protocol::kSimple ? "Simple" : "LL"));
    OneGpuRing ring({3, 2, kSlots, kSlotBytes});
    DeviceBuffer buffer(2 * 100000 * sizeof(float));
    check(cudaMemset(buffer.data(), 0, buffer.bytes()), "cudaMemset");
    launchWithoutLastRank(ring, buffer, protocol, device::kNoSpinBudget);
    // Without rank 2 nothing can end them but the flag.
    CHECK_FALSE(ring.waitAll(200ms));
    ring.setAbort(true);
    ring.awaitAborted(kLimit);
    for (int r = 0; r < 2; ++r) {
      for (int ch = 0; ch < 2; ++ch) CHECK(ring.status(r, ch) == device::Status::kAborted);
    }
  }
}

TEST_CASE("ring on one GPU: a spent spin budget ends the kernels of a ring missing a rank") {
  for (const Protocol protocol : {Protocol::kSimple, Protocol::kLL}) {
    INFO((protocol == Protocol::kSimple ? "Simple" : "LL"));
    OneGpuRing ring({3, 2, kSlots, kSlotBytes});
    DeviceBuffer buffer(2 * 100000 * sizeof(float));
    check(cudaMemset(buffer.data(), 0, buffer.bytes()), "cudaMemset");
    launchWithoutLastRank(ring, buffer, protocol, uint64_t{1} << 16);
    REQUIRE(ring.finishOrAbort(kLimit));  // the budget ends them, not the flag
    for (int r = 0; r < 2; ++r) {
      for (int ch = 0; ch < 2; ++ch) CHECK(ring.status(r, ch) == device::Status::kTimedOut);
    }
  }
}

}  // namespace
}  // namespace tutti::kernels::cuda::test
