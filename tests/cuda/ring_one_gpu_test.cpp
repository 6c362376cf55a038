// The ring all-reduce kernel (kernels/cuda/ring_kernel.cu) on a real GPU: 2-4 ranks sharing it
// (one_gpu_ring.hpp), every dtype and op, Simple and LL, 1 and 3 channels, seeded counts (0, 1,
// primes, random), in and out of place, aligned and not, checked bitwise against model.hpp's
// independent reference and across ranks, with guard bytes around every buffer; and the abort
// flag and the spin budget ending the kernels of a ring whose last rank never came. The same
// schedule runs on CPU threads in device_protocol_test; this is where the GPU's own memory model,
// the LL lines' vector accesses and the block barriers meet it.
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
  size_t count;
  bool inPlace;
  size_t offset;  // elements past a 256-byte boundary (nonzero: unaligned for 16-byte vectors)
  uint64_t seed;
};

std::string describe(DataType dtype, RedOp op, const Case& c) {
  std::ostringstream out;
  out << (c.protocol == Protocol::kSimple ? "Simple " : "LL ") << typeName(dtype) << " "
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

bool guardsIntact(const std::vector<unsigned char>& block, size_t begin, size_t bytes) {
  for (size_t i = 0; i < block.size(); ++i) {
    if ((i < begin || i >= begin + bytes) && block[i] != kPoison) return false;
  }
  return true;
}

// One all-reduce on every rank of `ring`; returns the number of wrong elements (each rank's
// output against the reference and against rank 0's bits, out-of-place sources unchanged) and
// checks that nothing outside the buffers was written and every channel ended kOk.
template <typename T, typename Op>
int runCase(OneGpuRing& ring, DataType dtype, RedOp op, const Case& c) {
  std::mt19937_64 rng(c.seed);
  const int n = c.nranks;
  const size_t bytes = c.count * sizeof(T);
  std::vector<std::vector<T>> inputs(n, std::vector<T>(c.count));
  std::deque<GuardedBuffer> srcs, dsts;  // a deque: they cannot move
  for (int r = 0; r < n; ++r) {
    for (auto& x : inputs[r]) x = model::ringInput<T>(rng, op);
    srcs.emplace_back(bytes, c.offset * sizeof(T));
    dsts.emplace_back(bytes, c.offset * sizeof(T));
    check(cudaMemcpy(srcs[r].data(), inputs[r].data(), bytes, cudaMemcpyHostToDevice),
          "cudaMemcpy(to device)");
  }
  for (int r = 0; r < n; ++r) {
    ring.launch(r, srcs[r].data(), (c.inPlace ? srcs : dsts)[r].data(), c.count, dtype, op,
                c.protocol);
  }
  REQUIRE(ring.finishOrAbort(kLimit));
  for (int r = 0; r < n; ++r) {
    for (int ch = 0; ch < c.nchannels; ++ch) {
      // count 0 enqueues nothing: no kernel writes a status.
      CHECK(ring.status(r, ch) == (c.count == 0 ? OneGpuRing::kPending : device::Status::kOk));
    }
  }

  std::vector<std::vector<unsigned char>> srcBlocks, dstBlocks;
  for (int r = 0; r < n; ++r) {
    srcBlocks.push_back(srcs[r].copyBack());
    dstBlocks.push_back(dsts[r].copyBack());
  }
  auto element = [&](const std::vector<unsigned char>& block, size_t begin, size_t i) {
    T v;
    std::memcpy(&v, block.data() + begin + i * sizeof(T), sizeof(T));
    return v;
  };
  int bad = 0;
  std::vector<T> x(n);
  for (int r = 0; r < n; ++r) {
    const auto& out = c.inPlace ? srcBlocks[r] : dstBlocks[r];
    const auto& first = c.inPlace ? srcBlocks[0] : dstBlocks[0];
    const size_t begin = srcs[r].begin;
    CHECK(guardsIntact(srcBlocks[r], begin, bytes));
    CHECK(guardsIntact(dstBlocks[r], begin, c.inPlace ? 0 : bytes));
    for (size_t i = 0; i < c.count; ++i) {
      for (int k = 0; k < n; ++k) x[k] = inputs[k][i];
      double want = 0;
      const T got = element(out, begin, i);
      const T zero = element(first, begin, i);
      const bool same = std::memcmp(&got, &zero, sizeof(T)) == 0;
      if ((!model::matches(got, x.data(), n, op, model::Mode::kSmallInts, &want) || !same) &&
          ++bad <= 3) {
        UNSCOPED_INFO("rank " << r << " element " << i << ": got " << model::toDouble(got)
                              << " want " << want << (same ? "" : " (differs from rank 0)"));
      }
      const T kept = element(srcBlocks[r], begin, i);
      if (!c.inPlace && std::memcmp(&kept, &inputs[r][i], sizeof(T)) != 0 && ++bad <= 3) {
        UNSCOPED_INFO("rank " << r << " source element " << i << " changed");
      }
    }
  }
  return bad;
}

// Runs the case on `ring` unless its blocks cannot all be resident (said, and skipped).
void checkCase(OneGpuRing& ring, DataType dtype, RedOp op, const Case& c) {
  INFO(describe(dtype, op, c));
  const std::string problem = coResidencyProblem(ring.shape(), dtype, op, c.protocol);
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
