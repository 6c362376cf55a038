// kernels/device/launch.hpp: what one launch of the device collectives carries, and what each of
// its thread groups (one per channel) runs. The same code runs a block of the CUDA kernels
// (kernels/cuda/collective_kernel.cu, group = BlockGroup) and a CPU thread standing in for one (the
// CPU stand-in driver of the tests, group = HostGroup), so what CI runs on CPU threads is what the
// GPU runs.
//
// The kernels are extern "C" with names built from the lists below, so that the host finds them
// in the embedded fatbin by name (cuModuleGetFunction) without C++ mangling: kernelName() on the
// host and the macros in the .cu spell them from the same lists.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/device/chain_broadcast.hpp"
#include "kernels/device/chain_reduce.hpp"
#include "kernels/device/ll.hpp"
#include "kernels/device/ring_allgather.hpp"
#include "kernels/device/ring_allreduce.hpp"
#include "kernels/device/ring_reduce_scatter.hpp"
#include "kernels/device/simple.hpp"
#include "kernels/device/tree_allreduce.hpp"
#include "kernels/kernels.hpp"
#include "kernels/ops.hpp"

namespace tutti::kernels::device {

enum class Protocol : int { kSimple = 0, kLL = 1 };

// The collectives of the device protocol: all-reduce over a ring or a tree, reduce-scatter and
// allgather over a ring, broadcast and reduce as chains along the ring.
enum class Collective : int { kAllReduce, kReduceScatter, kAllGather, kBroadcast, kReduce };
enum class Algorithm : int { kRing, kTree };

constexpr int kMaxChannels = 16;
constexpr int kBlockThreads = 256;  // per block, i.e. per channel

// What a channel's status reads before its group has written one: the host sets kPending before
// the launch, the group's first thread writes kRunning when it starts and the result at its end.
constexpr auto kPending = static_cast<Status>(-1);
constexpr auto kRunning = static_cast<Status>(-2);

// One channel's ring. Channels may run different rings (NCCL's: planned from the GPUs' links), so
// each has its own order, and this rank its own place in it.
struct RingLinks {
  Fifo fromPrev;
  Fifo toNext;
  int position;      // this rank's place in the channel's ring
  const int* ranks;  // the rank at each position (RingArgs::ranks); null: rank order
};

// One collective of a launch. Its channels are its own (at most the launch's): how a rank groups
// collectives into launches may differ from its peers' (it depends on where its buffers lie),
// while every collective runs alike on every rank.
struct Work {
  Collective collective;
  const void* src;
  void* dst;
  size_t count;   // elements; bytes for the byte-moving kernels
  int root;       // broadcast, reduce: the root's rank
  int nchannels;  // the first nchannels channels of the launch run it
};

// The most collectives one launch runs: a group's independent collectives of one kernel go to
// the GPU together, one launch instead of one each (NCCL's aggregation).
constexpr int kMaxWorks = 8;

// The kernels' one parameter (under CUDA's 4 KB): the collectives it runs, one after the other on
// every channel, and a ring's or a tree's links per channel.
struct Launch {
  Algorithm algorithm;
  int nworks;
  Work works[kMaxWorks];
  int nranks;
  int nchannels;
  union {
    RingLinks ring[kMaxChannels];
    TreeLinks tree[kMaxChannels];
  };
  uint32_t* abortFlag;  // device-visible; the host sets it nonzero to abort
  uint64_t spinBudget;
  Status* status;  // device-visible, nchannels entries
};
// CUDA's classic limit on a kernel's parameters: a larger kMaxWorks or kMaxChannels must not pass
// it unnoticed.
static_assert(sizeof(Launch) <= 4096, "a launch is the kernels' one parameter");

inline bool reducing(Collective c) {
  return c != Collective::kAllGather && c != Collective::kBroadcast;
}

template <typename T>
TUTTI_HOST_DEVICE RingArgs<T> ringOf(const Launch& l, const Work& w, int channel) {
  const RingLinks& ring = l.ring[channel];
  // Only the chains from and to a root look for it in the ring's table.
  const bool rooted = w.collective == Collective::kBroadcast || w.collective == Collective::kReduce;
  return {static_cast<const T*>(w.src),
          static_cast<T*>(w.dst),
          w.count,
          l.nranks,
          ring.position,
          rooted ? positionOf(ring.ranks, w.root, l.nranks) : 0,
          ring.ranks,
          channel,
          w.nchannels,
          ring.fromPrev,
          ring.toNext,
          {l.abortFlag, l.spinBudget}};
}

// One channel of a reducing collective (ring or tree all-reduce, reduce-scatter, reduce).
template <typename Proto, typename T, typename Op, typename Group>
TUTTI_HOST_DEVICE Status runReducing(const Group& group, const Launch& l, const Work& w,
                                     int channel) {
  if (l.algorithm == Algorithm::kTree) {
    const TreeArgs<T> tree{static_cast<const T*>(w.src),
                           static_cast<T*>(w.dst),
                           w.count,
                           channel,
                           w.nchannels,
                           l.tree[channel],
                           {l.abortFlag, l.spinBudget}};
    return treeAllReduce<Proto, T, Op>(group, tree);
  }
  if (w.collective == Collective::kReduceScatter)
    return ringReduceScatter<Proto, T, Op>(group, ringOf<T>(l, w, channel));
  if (w.collective == Collective::kReduce)
    return chainReduce<Proto, T, Op>(group, ringOf<T>(l, w, channel));
  return ringAllReduce<Proto, T, Op>(group, ringOf<T>(l, w, channel));
}

// One channel of allgather or broadcast: bytes moved, whatever the dtype.
template <typename Proto, typename Group>
TUTTI_HOST_DEVICE Status runCopying(const Group& group, const Launch& l, const Work& w,
                                    int channel) {
  const RingArgs<unsigned char> ring = ringOf<unsigned char>(l, w, channel);
  return w.collective == Collective::kAllGather ? ringAllGather<Proto>(group, ring)
                                                : chainBroadcast<Proto>(group, ring);
}

// One channel, `channel`, of every work of the launch that runs on it, in turn, run(work) each: the
// group agrees after each (a barrier, as a kernel's end is between launches: the next work's FIFO
// counters are read after the last one's are written), and the first failure ends the channel.
template <typename Group, typename Run>
TUTTI_HOST_DEVICE Status runWorks(const Group& group, const Launch& l, int channel,
                                  const Run& run) {
  Status status = Status::kOk;
  for (int w = 0; w < l.nworks && status == Status::kOk; ++w)
    if (channel < l.works[w].nchannels) status = group.agree(run(l.works[w]));
  return status;
}

// avg's last step, dst[i] = dst[i] / nranks as kernels::avgFinish, for the channel's share of
// count elements (a launch of the dividing kernel: no FIFOs, no status).
template <typename T, typename Group>
TUTTI_HOST_DEVICE void runDivide(const Group& group, const Launch& l, int channel) {
  const Work& w = l.works[0];
  T* data = static_cast<T*>(w.dst);
  const size_t share = (w.count + static_cast<size_t>(l.nchannels) - 1) / l.nchannels;
  const size_t begin = share * static_cast<size_t>(channel);
  const size_t end = begin + share < w.count ? begin + share : w.count;
  for (size_t i = begin + static_cast<size_t>(group.index()); i < end;
       i += static_cast<size_t>(group.size()))
    data[i] = Accum<T>::narrow(avgDivide<T>(Accum<T>::widen(data[i]), l.nranks));
}

// The kernels, by name: tutti_reduce_<protocol>_<dtype>_<op> for every dtype x op (avg runs as
// sum, then tutti_divide_<dtype>), tutti_copy_<protocol> and tutti_divide_<dtype>.

// Every dtype with its storage type, after the leading arguments: X(..., tname, T).
#define TUTTI_DEVICE_TYPES(X, ...)                     \
  X(__VA_ARGS__, int8, int8_t)                         \
  X(__VA_ARGS__, uint8, uint8_t)                       \
  X(__VA_ARGS__, int32, int32_t)                       \
  X(__VA_ARGS__, uint32, uint32_t)                     \
  X(__VA_ARGS__, int64, int64_t)                       \
  X(__VA_ARGS__, uint64, uint64_t)                     \
  X(__VA_ARGS__, float16, ::tutti::kernels::float16)   \
  X(__VA_ARGS__, bfloat16, ::tutti::kernels::bfloat16) \
  X(__VA_ARGS__, float32, float)                       \
  X(__VA_ARGS__, float64, double)

// X(proto, Proto, tname, T, oname, Op)
#define TUTTI_REDUCING_FOR_TYPE(X, proto, Proto, tname, T) \
  X(proto, Proto, tname, T, sum, OpSum)                    \
  X(proto, Proto, tname, T, prod, OpProd)                  \
  X(proto, Proto, tname, T, min, OpMin)                    \
  X(proto, Proto, tname, T, max, OpMax)
#define TUTTI_REDUCING_FOR_PROTOCOL(X, proto, Proto) \
  TUTTI_DEVICE_TYPES(TUTTI_REDUCING_FOR_TYPE, X, proto, Proto)
#define TUTTI_REDUCING_KERNELS(X)                \
  TUTTI_REDUCING_FOR_PROTOCOL(X, simple, Simple) \
  TUTTI_REDUCING_FOR_PROTOCOL(X, ll, LL)

// X(proto, Proto)
#define TUTTI_COPYING_KERNELS(X) X(simple, Simple) X(ll, LL)

// X(divide, tname, T)
#define TUTTI_DIVIDING_KERNELS(X) TUTTI_DEVICE_TYPES(X, divide)

}  // namespace tutti::kernels::device
