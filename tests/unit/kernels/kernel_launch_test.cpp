// libtutti's launchers of the device collectives (runtime/gpu/kernel_launch.hpp). They run
// without a GPU or a driver: arguments out of range are refused, naming what is wrong, before any
// CUDA call, and an empty collective enqueues nothing. What the kernels compute is
// device_protocol_test's business (the same code on CPU threads), and gpu-kernels' (the runtime's
// device path with the CPU stand-in driver); running them on a GPU is the cuda suite's.
#include "runtime/gpu/kernel_launch.hpp"

#include <catch2/catch.hpp>
#include <cstdint>
#include <functional>
#include <vector>

#include "tests/error_of.hpp"

namespace tutti::runtime::gpu {
namespace {

using kernels::DataType;
using kernels::RedOp;
using kernels::device::kMaxChannels;
namespace device = kernels::device;

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
    a.nworks = 1;
    a.works[0] = {Collective::kAllReduce, data, data, 8, 0, 1};  // root rank 0: see below
    a.dtype = DataType::kFloat32;
    a.op = RedOp::kSum;
    a.protocol = Protocol::kSimple;
    a.nranks = 2;
    a.rank = 0;  // the root: broadcast reads its src, reduce writes its dst
    a.nchannels = 1;
    a.ring[0] = {fifos.fifo(0), fifos.fifo(1), 0, nullptr};
    a.abortFlag = &abortFlag;
    a.spinBudget = device::kNoSpinBudget;
    a.status = status;
    return a;
  }

  // An inner node of a tree: a parent and two children.
  TreeAllReduceArgs tree() {
    TreeAllReduceArgs a{};
    a.nworks = 1;
    a.works[0] = {Collective::kAllReduce, data, data, 8, 0, 1};
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

const std::vector<std::pair<const char*, Collective>> kRingCollectives = {
    {"all-reduce", Collective::kAllReduce},
    {"reduce-scatter", Collective::kReduceScatter},
    {"allgather", Collective::kAllGather},
    {"broadcast", Collective::kBroadcast},
    {"reduce", Collective::kReduce}};

// `args` with its one work of `collective`.
RingCollectiveArgs of(Collective collective, RingCollectiveArgs args) {
  args.works[0].collective = collective;
  return args;
}

// The refusal `launchRing(args)` with its work of `collective` must make: kInvalidArgument, its
// message naming `words`, before any CUDA call (there is no stream, and no driver need be loaded).
void checkRefused(Collective collective, const RingCollectiveArgs& args, const char* words) {
  const std::string message = tests::messageOf(ErrorCode::kInvalidArgument,
                                               [&] { launchRing(of(collective, args), nullptr); });
  CHECK_THAT(message, Catch::Contains(words));
}

struct BadRing {
  const char* what;
  std::function<void(RingCollectiveArgs&)> spoil;
  const char* named;  // what the refusal must say
};
const std::vector<BadRing> kBadRing = {
    {"dtype", [](RingCollectiveArgs& a) { a.dtype = static_cast<DataType>(42); }, "dtype 42"},
    {"protocol", [](RingCollectiveArgs& a) { a.protocol = static_cast<Protocol>(2); },
     "protocol 2"},
    {"no ranks", [](RingCollectiveArgs& a) { a.nranks = 0; }, "ring of 0 ranks"},
    {"rank", [](RingCollectiveArgs& a) { a.rank = 2; }, "rank 2 in a ring of 2"},
    {"negative rank", [](RingCollectiveArgs& a) { a.rank = -1; }, "rank -1"},
    {"position", [](RingCollectiveArgs& a) { a.ring[0].position = 2; }, "channel 0: position 2"},
    {"negative position", [](RingCollectiveArgs& a) { a.ring[0].position = -1; }, "position -1"},
    {"no channels", [](RingCollectiveArgs& a) { a.nchannels = 0; }, "0 channels"},
    {"too many channels", [](RingCollectiveArgs& a) { a.nchannels = kMaxChannels + 1; },
     "17 channels"},
    {"abort flag", [](RingCollectiveArgs& a) { a.abortFlag = nullptr; }, "abort flag"},
    {"status", [](RingCollectiveArgs& a) { a.status = nullptr; }, "status"},
    {"no src", [](RingCollectiveArgs& a) { a.works[0].src = nullptr; }, "src is NULL"},
    {"count overflow", [](RingCollectiveArgs& a) { a.works[0].count = SIZE_MAX / 2; }, "overflows"},
    {"no slots", [](RingCollectiveArgs& a) { a.ring[0].toNext.nslots = 0; }, "to next has 0 slots"},
    {"slot size", [](RingCollectiveArgs& a) { a.ring[0].fromPrev.slotBytes = 40; }, "of 40 bytes"},
    {"small slot", [](RingCollectiveArgs& a) { a.ring[0].fromPrev.slotBytes = 16; }, "of 16 bytes"},
    {"slot alignment", [](RingCollectiveArgs& a) { a.ring[0].toNext.slots += 8; }, "aligned"},
    {"head", [](RingCollectiveArgs& a) { a.ring[0].toNext.head = nullptr; }, "lacks its head"},
};

TEST_CASE("collective kernel launchers: arguments out of range are refused, named") {
  for (const auto& [name, collective] : kRingCollectives) {
    for (const BadRing& bad : kBadRing) {
      INFO(name << ": " << bad.what);
      ValidArgs valid;
      RingCollectiveArgs args = valid.ring();
      bad.spoil(args);
      checkRefused(collective, args, bad.named);
    }
  }
}

TEST_CASE("collective kernel launchers: what only some collectives check") {
  ValidArgs valid;
  RingCollectiveArgs args = valid.ring();
  args.op = static_cast<RedOp>(-1);
  for (const Collective c :
       {Collective::kAllReduce, Collective::kReduceScatter, Collective::kReduce})
    checkRefused(c, args, "op -1");
  // allgather and broadcast reduce nothing: their op is not looked at.
  CHECK(ringProblem(of(Collective::kAllGather, args)).empty());
  // A root out of the ring, for the chains from and to it.
  for (const int root : {-1, 2}) {
    args = valid.ring();
    args.works[0].root = root;
    checkRefused(Collective::kBroadcast, args, "root");
    checkRefused(Collective::kReduce, args, "root");
  }
  // The root of a reduce needs a dst, as every rank of an all-reduce does; allgather's dst and
  // reduce-scatter's src hold nranks blocks: a count whose nranks blocks overflow.
  args = valid.ring();
  args.works[0].dst = nullptr;
  checkRefused(Collective::kReduce, args, "dst is NULL");
  checkRefused(Collective::kAllReduce, args, "dst is NULL");
  args = valid.ring();
  args.works[0].count = SIZE_MAX / 4 / 2 + 1;
  checkRefused(Collective::kAllGather, args, "overflows");
  checkRefused(Collective::kReduceScatter, args, "overflows");
  CHECK(ringProblem(of(Collective::kAllReduce, args)).empty());  // one block of that count fits
}

TEST_CASE("tree all-reduce launcher: arguments out of range enqueue nothing") {
  struct BadTree {
    const char* what;
    std::function<void(TreeAllReduceArgs&)> spoil;
    const char* named;
  };
  const std::vector<BadTree> bad = {
      {"dtype", [](TreeAllReduceArgs& a) { a.dtype = static_cast<DataType>(42); }, "dtype 42"},
      {"op", [](TreeAllReduceArgs& a) { a.op = static_cast<RedOp>(-1); }, "op -1"},
      {"protocol", [](TreeAllReduceArgs& a) { a.protocol = static_cast<Protocol>(2); },
       "protocol 2"},
      {"no channels", [](TreeAllReduceArgs& a) { a.nchannels = 0; }, "0 channels"},
      {"too many channels", [](TreeAllReduceArgs& a) { a.nchannels = kMaxChannels + 1; },
       "17 channels"},
      {"abort flag", [](TreeAllReduceArgs& a) { a.abortFlag = nullptr; }, "abort flag"},
      {"status", [](TreeAllReduceArgs& a) { a.status = nullptr; }, "status"},
      {"no dst", [](TreeAllReduceArgs& a) { a.works[0].dst = nullptr; }, "dst is NULL"},
      {"count overflow", [](TreeAllReduceArgs& a) { a.works[0].count = SIZE_MAX / 2; },
       "overflows"},
      {"not an all-reduce",
       [](TreeAllReduceArgs& a) { a.works[0].collective = Collective::kReduce; },
       "not an all-reduce"},
      {"no work", [](TreeAllReduceArgs& a) { a.nworks = 0; }, "0 collectives in one launch"},
      {"three children", [](TreeAllReduceArgs& a) { a.links[0].nchildren = 3; }, "3 children"},
      {"negative children", [](TreeAllReduceArgs& a) { a.links[0].nchildren = -1; }, "-1 children"},
      {"parent's slots", [](TreeAllReduceArgs& a) { a.links[0].fromParent.slots = nullptr; },
       "from parent lacks"},
      {"child's counter", [](TreeAllReduceArgs& a) { a.links[0].toChildren[1].tail = nullptr; },
       "to a child lacks"},
      {"slot sizes differ", [](TreeAllReduceArgs& a) { a.links[0].fromChildren[0].slotBytes = 32; },
       "slots of 64 and 32 bytes"},
  };
  for (const BadTree& b : bad) {
    INFO(b.what);
    ValidArgs valid;
    TreeAllReduceArgs args = valid.tree();
    b.spoil(args);
    const std::string message =
        tests::messageOf(ErrorCode::kInvalidArgument, [&] { launchTreeAllReduce(args, nullptr); });
    CHECK_THAT(message, Catch::Contains(b.named));
  }
}

TEST_CASE("collective kernel launchers: an empty collective enqueues nothing") {
  // No stream and no driver: anything past the checks would fail.
  for (const auto& [name, collective] : kRingCollectives) {
    INFO(name);
    ValidArgs valid;
    RingCollectiveArgs args = of(collective, valid.ring());
    args.works[0] = {collective, nullptr, nullptr, 0, 0, 1};  // nothing to read or write
    args.works[1] = args.works[0];
    args.nworks = 2;
    CHECK_NOTHROW(launchRing(args, nullptr));
  }
  ValidArgs valid;
  TreeAllReduceArgs args = valid.tree();
  args.works[0].count = 0;
  CHECK_NOTHROW(launchTreeAllReduce(args, nullptr));
}

TEST_CASE("collective kernel launchers: several collectives in one launch, of one kernel") {
  ValidArgs valid;
  float more[8] = {};
  RingCollectiveArgs args = valid.ring();
  args.nworks = 3;
  args.works[1] = {Collective::kReduceScatter, more, more, 4, 0, 1};
  args.works[2] = {Collective::kReduce, more, more, 8, 1, 1};
  CHECK(ringProblem(args).empty());  // the reducing kernel runs all three
  args.works[1].nchannels = 2;
  CHECK_THAT(ringProblem(args), Catch::Contains("work 1: 2 channels (1 to the launch's 1)"));
  args.works[1].nchannels = 1;
  args.works[1].collective = Collective::kAllGather;
  CHECK_THAT(ringProblem(args), Catch::Contains("work 1: runs tutti_copy_simple, not "
                                                "tutti_reduce_simple_float32_sum as the first"));
  args.works[1].collective = Collective::kReduceScatter;
  args.works[2].root = 2;
  CHECK_THAT(ringProblem(args), Catch::Contains("work 2: root 2 in a ring of 2 ranks"));
  args.works[2].collective = static_cast<Collective>(9);
  CHECK_THAT(ringProblem(args), Catch::Contains("work 2: collective 9 is out of range"));
  for (const int nworks : {0, kernels::device::kMaxWorks + 1}) {
    args.nworks = nworks;
    checkRefused(Collective::kAllReduce, args,
                 (std::to_string(nworks) + " collectives in one launch").c_str());
  }
}

TEST_CASE("collective kernel occupancy: arguments out of range are refused before any CUDA call") {
  const Collective reduceScatter = Collective::kReduceScatter;
  CHECK_THAT(tests::messageOf(ErrorCode::kInvalidArgument,
                              [&] {
                                collectiveBlocksPerSm(reduceScatter, static_cast<DataType>(42),
                                                      RedOp::kSum, Protocol::kSimple);
                              }),
             Catch::Contains("dtype 42"));
  CHECK_THAT(tests::messageOf(ErrorCode::kInvalidArgument,
                              [&] {
                                collectiveBlocksPerSm(reduceScatter, DataType::kFloat32,
                                                      static_cast<RedOp>(-1), Protocol::kSimple);
                              }),
             Catch::Contains("op -1"));
  CHECK_THAT(tests::messageOf(ErrorCode::kInvalidArgument,
                              [&] {
                                collectiveBlocksPerSm(Collective::kAllGather, DataType::kFloat32,
                                                      RedOp::kSum, static_cast<Protocol>(2));
                              }),
             Catch::Contains("protocol 2"));
}

TEST_CASE(
    "kernel names: one per protocol x dtype x op, avg as sum, one copying kernel per protocol") {
  CHECK(kernelName(Collective::kAllReduce, DataType::kBfloat16, RedOp::kMax, Protocol::kLL) ==
        "tutti_reduce_ll_bfloat16_max");
  CHECK(kernelName(Collective::kReduceScatter, DataType::kFloat32, RedOp::kAvg,
                   Protocol::kSimple) == "tutti_reduce_simple_float32_sum");
  CHECK(kernelName(Collective::kAllGather, DataType::kInt64, RedOp::kProd, Protocol::kSimple) ==
        "tutti_copy_simple");
  CHECK(kernelName(Collective::kBroadcast, DataType::kUint8, RedOp::kSum, Protocol::kLL) ==
        "tutti_copy_ll");
}

}  // namespace
}  // namespace tutti::runtime::gpu
