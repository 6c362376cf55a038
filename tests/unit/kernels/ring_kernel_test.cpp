// The CUDA ring all-reduce's launcher (kernels/cuda/ring_kernel.cu), linked for real into a host
// program. It runs without a GPU: arguments out of range are refused before any CUDA call, and
// an empty all-reduce enqueues nothing. What the kernel computes is device_protocol_test's
// business (the same code on CPU threads); running it needs a GPU.
#include <catch2/catch.hpp>
#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/cuda/cuda_kernels.hpp"

namespace tutti::kernels::cuda {
namespace {

struct ValidArgs {
  alignas(16) unsigned char slots[2][4 * 64] = {};
  uint64_t counters[4] = {};
  uint32_t abortFlag = 0;
  device::Status status[kMaxChannels] = {};
  float data[8] = {};

  RingAllReduceArgs make() {
    RingAllReduceArgs a{};
    a.src = data;
    a.dst = data;
    a.count = 8;
    a.dtype = DataType::kFloat32;
    a.op = RedOp::kSum;
    a.protocol = Protocol::kSimple;
    a.nranks = 2;
    a.position = 0;
    a.nchannels = 1;
    a.fromPrev[0] = {&counters[0], &counters[1], slots[0], 4, 64};
    a.toNext[0] = {&counters[2], &counters[3], slots[1], 4, 64};
    a.abortFlag = &abortFlag;
    a.spinBudget = device::kNoSpinBudget;
    a.status = status;
    return a;
  }
};

TEST_CASE("ring kernel launcher: arguments out of range enqueue nothing") {
  const std::vector<std::pair<const char*, std::function<void(RingAllReduceArgs&)>>> bad = {
      {"dtype", [](RingAllReduceArgs& a) { a.dtype = static_cast<DataType>(42); }},
      {"op", [](RingAllReduceArgs& a) { a.op = static_cast<RedOp>(-1); }},
      {"protocol", [](RingAllReduceArgs& a) { a.protocol = static_cast<Protocol>(2); }},
      {"no ranks", [](RingAllReduceArgs& a) { a.nranks = 0; }},
      {"position", [](RingAllReduceArgs& a) { a.position = 2; }},
      {"no channels", [](RingAllReduceArgs& a) { a.nchannels = 0; }},
      {"too many channels", [](RingAllReduceArgs& a) { a.nchannels = kMaxChannels + 1; }},
      {"abort flag", [](RingAllReduceArgs& a) { a.abortFlag = nullptr; }},
      {"status", [](RingAllReduceArgs& a) { a.status = nullptr; }},
      {"no slots", [](RingAllReduceArgs& a) { a.toNext[0].nslots = 0; }},
      {"slot size", [](RingAllReduceArgs& a) { a.fromPrev[0].slotBytes = 40; }},
      {"small slot", [](RingAllReduceArgs& a) { a.fromPrev[0].slotBytes = 16; }},
      {"slot alignment", [](RingAllReduceArgs& a) { a.toNext[0].slots += 8; }},
      {"head", [](RingAllReduceArgs& a) { a.toNext[0].head = nullptr; }},
  };
  for (const auto& [what, spoil] : bad) {
    INFO(what);
    ValidArgs valid;
    RingAllReduceArgs args = valid.make();
    spoil(args);
    CHECK(ringAllReduceAsync(args, nullptr) == cudaErrorInvalidValue);
  }
}

TEST_CASE("ring kernel launcher: an empty all-reduce enqueues nothing") {
  ValidArgs valid;
  RingAllReduceArgs args = valid.make();
  args.count = 0;
  CHECK(ringAllReduceAsync(args, nullptr) == cudaSuccess);
}

TEST_CASE("ring kernel occupancy: arguments out of range are refused before any CUDA call") {
  int blocks = -1;
  CHECK(ringAllReduceBlocksPerSm(static_cast<DataType>(42), RedOp::kSum, Protocol::kSimple,
                                 &blocks) == cudaErrorInvalidValue);
  CHECK(ringAllReduceBlocksPerSm(DataType::kFloat32, static_cast<RedOp>(-1), Protocol::kSimple,
                                 &blocks) == cudaErrorInvalidValue);
  CHECK(ringAllReduceBlocksPerSm(DataType::kFloat32, RedOp::kSum, static_cast<Protocol>(2),
                                 &blocks) == cudaErrorInvalidValue);
  CHECK(ringAllReduceBlocksPerSm(DataType::kFloat32, RedOp::kSum, Protocol::kLL, nullptr) ==
        cudaErrorInvalidValue);
  CHECK(blocks == -1);
}

}  // namespace
}  // namespace tutti::kernels::cuda
