// The CUDA collectives' launchers (kernels/cuda/collective_kernel.cu), linked for real into a
// host program. It runs without a GPU: arguments out of range are refused before any CUDA call,
// and an empty collective enqueues nothing. What the kernels compute is device_protocol_test's
// business (the same code on CPU threads); running them needs a GPU.
#include <catch2/catch.hpp>
#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/cuda/cuda_kernels.hpp"

namespace tutti::kernels::cuda {
namespace {

struct Fifos {
  alignas(16) unsigned char slots[6][4 * 64] = {};
  uint64_t counters[12] = {};
  device::Fifo fifo(int i) { return {&counters[2 * i], &counters[2 * i + 1], slots[i], 4, 64}; }
};

struct ValidArgs {
  Fifos fifos;
  uint32_t abortFlag = 0;
  device::Status status[kMaxChannels] = {};
  float data[8 * 2] = {};

  RingCollectiveArgs ring() {
    RingCollectiveArgs a{};
    a.src = data;
    a.dst = data;
    a.count = 8;
    a.dtype = DataType::kFloat32;
    a.op = RedOp::kSum;
    a.protocol = Protocol::kSimple;
    a.nranks = 2;
    a.position = 0;
    a.root = 0;  // position 0: broadcast reads its src, reduce writes its dst
    a.nchannels = 1;
    a.fromPrev[0] = fifos.fifo(0);
    a.toNext[0] = fifos.fifo(1);
    a.abortFlag = &abortFlag;
    a.spinBudget = device::kNoSpinBudget;
    a.status = status;
    return a;
  }

  // An inner node of a tree: a parent and two children.
  TreeAllReduceArgs tree() {
    TreeAllReduceArgs a{};
    a.src = data;
    a.dst = data;
    a.count = 8;
    a.dtype = DataType::kFloat32;
    a.op = RedOp::kSum;
    a.protocol = Protocol::kLL;
    a.nchannels = 1;
    a.links[0] = {true,
                  2,
                  fifos.fifo(0),
                  fifos.fifo(1),
                  {fifos.fifo(2), fifos.fifo(3)},
                  {fifos.fifo(4), fifos.fifo(5)}};
    a.abortFlag = &abortFlag;
    a.spinBudget = device::kNoSpinBudget;
    a.status = status;
    return a;
  }
};

using RingLauncher = cudaError_t (*)(const RingCollectiveArgs&, cudaStream_t);
const std::vector<std::pair<const char*, RingLauncher>> kRingLaunchers = {
    {"all-reduce", ringAllReduceAsync},
    {"reduce-scatter", ringReduceScatterAsync},
    {"allgather", ringAllGatherAsync},
    {"broadcast", ringBroadcastAsync},
    {"reduce", ringReduceAsync}};

using RingSpoiler = std::function<void(RingCollectiveArgs&)>;
const std::vector<std::pair<const char*, RingSpoiler>> kBadRing = {
    {"dtype", [](RingCollectiveArgs& a) { a.dtype = static_cast<DataType>(42); }},
    {"protocol", [](RingCollectiveArgs& a) { a.protocol = static_cast<Protocol>(2); }},
    {"no ranks", [](RingCollectiveArgs& a) { a.nranks = 0; }},
    {"position", [](RingCollectiveArgs& a) { a.position = 2; }},
    {"negative position", [](RingCollectiveArgs& a) { a.position = -1; }},
    {"no channels", [](RingCollectiveArgs& a) { a.nchannels = 0; }},
    {"too many channels", [](RingCollectiveArgs& a) { a.nchannels = kMaxChannels + 1; }},
    {"abort flag", [](RingCollectiveArgs& a) { a.abortFlag = nullptr; }},
    {"status", [](RingCollectiveArgs& a) { a.status = nullptr; }},
    {"no src", [](RingCollectiveArgs& a) { a.src = nullptr; }},
    {"count overflow", [](RingCollectiveArgs& a) { a.count = SIZE_MAX / 2; }},
    {"no slots", [](RingCollectiveArgs& a) { a.toNext[0].nslots = 0; }},
    {"slot size", [](RingCollectiveArgs& a) { a.fromPrev[0].slotBytes = 40; }},
    {"small slot", [](RingCollectiveArgs& a) { a.fromPrev[0].slotBytes = 16; }},
    {"slot alignment", [](RingCollectiveArgs& a) { a.toNext[0].slots += 8; }},
    {"head", [](RingCollectiveArgs& a) { a.toNext[0].head = nullptr; }},
};

TEST_CASE("collective kernel launchers: arguments out of range enqueue nothing") {
  for (const auto& [collective, launch] : kRingLaunchers) {
    for (const auto& [what, spoil] : kBadRing) {
      INFO(collective << ": " << what);
      ValidArgs valid;
      RingCollectiveArgs args = valid.ring();
      spoil(args);
      CHECK(launch(args, nullptr) == cudaErrorInvalidValue);
    }
  }
}

TEST_CASE("collective kernel launchers: what only some collectives check") {
  ValidArgs valid;
  RingCollectiveArgs args = valid.ring();
  args.op = static_cast<RedOp>(-1);
  for (const RingLauncher launch : {ringAllReduceAsync, ringReduceScatterAsync, ringReduceAsync}) {
    CHECK(launch(args, nullptr) == cudaErrorInvalidValue);
  }
  // A root out of the ring, for the chains from and to it.
  for (const int root : {-1, 2}) {
    args = valid.ring();
    args.root = root;
    CHECK(ringBroadcastAsync(args, nullptr) == cudaErrorInvalidValue);
    CHECK(ringReduceAsync(args, nullptr) == cudaErrorInvalidValue);
  }
  // The root of a reduce needs a dst, as every rank of an all-reduce does; allgather's dst and
  // reduce-scatter's src hold nranks blocks: a count whose nranks blocks overflow.
  args = valid.ring();
  args.dst = nullptr;
  CHECK(ringReduceAsync(args, nullptr) == cudaErrorInvalidValue);
  CHECK(ringAllReduceAsync(args, nullptr) == cudaErrorInvalidValue);
  args = valid.ring();
  args.count = SIZE_MAX / 4 / 2 + 1;
  CHECK(ringAllGatherAsync(args, nullptr) == cudaErrorInvalidValue);
  CHECK(ringReduceScatterAsync(args, nullptr) == cudaErrorInvalidValue);
}

TEST_CASE("tree all-reduce launcher: arguments out of range enqueue nothing") {
  using TreeSpoiler = std::function<void(TreeAllReduceArgs&)>;
  const std::vector<std::pair<const char*, TreeSpoiler>> bad = {
      {"dtype", [](TreeAllReduceArgs& a) { a.dtype = static_cast<DataType>(42); }},
      {"op", [](TreeAllReduceArgs& a) { a.op = static_cast<RedOp>(-1); }},
      {"protocol", [](TreeAllReduceArgs& a) { a.protocol = static_cast<Protocol>(2); }},
      {"no channels", [](TreeAllReduceArgs& a) { a.nchannels = 0; }},
      {"too many channels", [](TreeAllReduceArgs& a) { a.nchannels = kMaxChannels + 1; }},
      {"abort flag", [](TreeAllReduceArgs& a) { a.abortFlag = nullptr; }},
      {"status", [](TreeAllReduceArgs& a) { a.status = nullptr; }},
      {"no dst", [](TreeAllReduceArgs& a) { a.dst = nullptr; }},
      {"count overflow", [](TreeAllReduceArgs& a) { a.count = SIZE_MAX / 2; }},
      {"three children", [](TreeAllReduceArgs& a) { a.links[0].nchildren = 3; }},
      {"negative children", [](TreeAllReduceArgs& a) { a.links[0].nchildren = -1; }},
      {"parent's slots", [](TreeAllReduceArgs& a) { a.links[0].fromParent.slots = nullptr; }},
      {"child's counter", [](TreeAllReduceArgs& a) { a.links[0].toChildren[1].tail = nullptr; }},
      {"slot sizes differ",
       [](TreeAllReduceArgs& a) { a.links[0].fromChildren[0].slotBytes = 32; }},
  };
  for (const auto& [what, spoil] : bad) {
    INFO(what);
    ValidArgs valid;
    TreeAllReduceArgs args = valid.tree();
    spoil(args);
    CHECK(treeAllReduceAsync(args, nullptr) == cudaErrorInvalidValue);
  }
}

TEST_CASE("collective kernel launchers: an empty collective enqueues nothing") {
  for (const auto& [collective, launch] : kRingLaunchers) {
    INFO(collective);
    ValidArgs valid;
    RingCollectiveArgs args = valid.ring();
    args.count = 0;
    args.src = nullptr;  // nothing to read
    args.dst = nullptr;
    CHECK(launch(args, nullptr) == cudaSuccess);
  }
  ValidArgs valid;
  TreeAllReduceArgs args = valid.tree();
  args.count = 0;
  CHECK(treeAllReduceAsync(args, nullptr) == cudaSuccess);
}

TEST_CASE("collective kernel occupancy: arguments out of range are refused before any CUDA call") {
  int blocks = -1;
  const Collective reduceScatter = Collective::kReduceScatter;
  CHECK(collectiveBlocksPerSm(reduceScatter, static_cast<DataType>(42), RedOp::kSum,
                              Protocol::kSimple, &blocks) == cudaErrorInvalidValue);
  CHECK(collectiveBlocksPerSm(reduceScatter, DataType::kFloat32, static_cast<RedOp>(-1),
                              Protocol::kSimple, &blocks) == cudaErrorInvalidValue);
  CHECK(collectiveBlocksPerSm(Collective::kAllGather, DataType::kFloat32, RedOp::kSum,
                              static_cast<Protocol>(2), &blocks) == cudaErrorInvalidValue);
  CHECK(collectiveBlocksPerSm(Collective::kAllReduce, DataType::kFloat32, RedOp::kSum,
                              Protocol::kLL, nullptr) == cudaErrorInvalidValue);
  CHECK(blocks == -1);
}

}  // namespace
}  // namespace tutti::kernels::cuda
