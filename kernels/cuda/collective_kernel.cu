// kernels/cuda/collective_kernel.cu: the device protocol's collectives as CUDA kernels. Each
// block runs one channel of a schedule of kernels/device/ (the very schedules, primitives and
// protocols that the CPU-thread tests run), with a thread block as the group.
//
// Two kernels per protocol, to keep nvcc's time and the code in check: the reducing collectives
// (ring and tree all-reduce, reduce-scatter, reduce) share one kernel per dtype x op that
// switches on the collective at run time, so the primitives' chunk mover is compiled once per
// dtype x op (avg is sum), not once per collective; allgather and broadcast reduce nothing and
// share one kernel that moves bytes, whatever the dtype.
#include <cstdint>

#include "kernels/cuda/cuda_kernels.hpp"
#include "kernels/device/chain_broadcast.hpp"
#include "kernels/device/chain_reduce.hpp"
#include "kernels/device/group.hpp"
#include "kernels/device/ll.hpp"
#include "kernels/device/ring_allgather.hpp"
#include "kernels/device/ring_allreduce.hpp"
#include "kernels/device/ring_reduce_scatter.hpp"
#include "kernels/device/simple.hpp"
#include "kernels/device/tree_allreduce.hpp"
#include "kernels/ops.hpp"

namespace tutti::kernels::cuda {
namespace {

enum class Algorithm : int { kRing, kTree };

struct RingLinks {
  device::Fifo fromPrev;
  device::Fifo toNext;
};

// The kernels' parameter (under 4 KB): a ring's or a tree's links per channel.
struct Launch {
  Collective collective;
  Algorithm algorithm;
  const void* src;
  void* dst;
  size_t count;  // elements; bytes for the byte-moving kernel
  int nranks;
  int position;
  int root;
  int nchannels;
  union {
    RingLinks ring[kMaxChannels];
    device::TreeLinks tree[kMaxChannels];
  };
  uint32_t* abortFlag;
  uint64_t spinBudget;
  device::Status* status;
};

template <typename T>
__device__ device::RingArgs<T> ringOf(const Launch& l, int channel) {
  return {static_cast<const T*>(l.src),
          static_cast<T*>(l.dst),
          l.count,
          l.nranks,
          l.position,
          l.root,
          channel,
          l.nchannels,
          l.ring[channel].fromPrev,
          l.ring[channel].toNext,
          {l.abortFlag, l.spinBudget}};
}

template <typename Proto, typename T, typename Op>
__global__ void __launch_bounds__(kRingThreads) reducingKernel(Launch l) {
  const int channel = static_cast<int>(blockIdx.x);
  const device::BlockGroup group{};
  device::Status status = device::Status::kOk;
  if (l.algorithm == Algorithm::kTree) {
    const device::TreeArgs<T> tree{static_cast<const T*>(l.src),
                                   static_cast<T*>(l.dst),
                                   l.count,
                                   channel,
                                   l.nchannels,
                                   l.tree[channel],
                                   {l.abortFlag, l.spinBudget}};
    status = device::treeAllReduce<Proto, T, Op>(group, tree);
  } else if (l.collective == Collective::kReduceScatter) {
    status = device::ringReduceScatter<Proto, T, Op>(group, ringOf<T>(l, channel));
  } else if (l.collective == Collective::kReduce) {
    status = device::chainReduce<Proto, T, Op>(group, ringOf<T>(l, channel));
  } else {
    status = device::ringAllReduce<Proto, T, Op>(group, ringOf<T>(l, channel));
  }
  if (threadIdx.x == 0) l.status[channel] = status;
}

template <typename Proto>
__global__ void __launch_bounds__(kRingThreads) copyingKernel(Launch l) {
  const int channel = static_cast<int>(blockIdx.x);
  const device::BlockGroup group{};
  const device::RingArgs<unsigned char> ring = ringOf<unsigned char>(l, channel);
  const device::Status status = l.collective == Collective::kAllGather
                                    ? device::ringAllGather<Proto>(group, ring)
                                    : device::chainBroadcast<Proto>(group, ring);
  if (threadIdx.x == 0) l.status[channel] = status;
}

bool reducing(Collective c) {
  return c != Collective::kAllGather && c != Collective::kBroadcast;
}

bool validProtocol(Protocol p) {
  return p == Protocol::kSimple || p == Protocol::kLL;
}

bool validFifo(const device::Fifo& f) {
  return f.head != nullptr && f.tail != nullptr && f.slots != nullptr && f.nslots > 0 &&
         f.slotBytes >= 32 && f.slotBytes % 16 == 0 &&
         reinterpret_cast<uintptr_t>(f.slots) % 16 == 0;
}

// What every collective needs: a known dtype (and op where it reduces) and protocol, 1 to
// kMaxChannels channels, somewhere to signal abort and report status, buffers when there is data.
bool validCommon(Collective c, DataType dtype, RedOp op, Protocol protocol, int nchannels,
                 const uint32_t* abortFlag, const device::Status* status) {
  return isValid(dtype) && (!reducing(c) || isValid(op)) && validProtocol(protocol) &&
         nchannels >= 1 && nchannels <= kMaxChannels && abortFlag != nullptr && status != nullptr;
}

bool validRing(Collective c, const RingCollectiveArgs& a) {
  if (!validCommon(c, a.dtype, a.op, a.protocol, a.nchannels, a.abortFlag, a.status) ||
      a.nranks < 1 || a.position < 0 || a.position >= a.nranks) {
    return false;
  }
  if ((c == Collective::kBroadcast || c == Collective::kReduce) &&
      (a.root < 0 || a.root >= a.nranks)) {
    return false;
  }
  // Reduce-scatter's src and allgather's dst hold nranks blocks: their size must be a size_t.
  const size_t blocks = c == Collective::kReduceScatter || c == Collective::kAllGather
                            ? static_cast<size_t>(a.nranks)
                            : 1;
  if (a.count > SIZE_MAX / blocks / typeSize(a.dtype)) return false;
  // Broadcast reads only the root's src, reduce writes only the root's dst.
  const bool reads = c != Collective::kBroadcast || a.position == a.root;
  const bool writes = c != Collective::kReduce || a.position == a.root;
  if (a.count > 0 && ((reads && a.src == nullptr) || (writes && a.dst == nullptr))) return false;
  for (int ch = 0; ch < a.nchannels && a.nranks > 1; ++ch) {
    if (!validFifo(a.fromPrev[ch]) || !validFifo(a.toNext[ch])) return false;
  }
  return true;
}

bool validTree(const TreeAllReduceArgs& a) {
  if (!validCommon(Collective::kAllReduce, a.dtype, a.op, a.protocol, a.nchannels, a.abortFlag,
                   a.status) ||
      (a.count > 0 && (a.src == nullptr || a.dst == nullptr))) {
    return false;
  }
  if (a.count > SIZE_MAX / typeSize(a.dtype)) return false;
  for (int ch = 0; ch < a.nchannels; ++ch) {
    const device::TreeLinks& l = a.links[ch];
    if (l.nchildren < 0 || l.nchildren > device::kMaxPeers) return false;
    // Parent and children cut the same chunks only if every FIFO has the same slot size.
    uint32_t slotBytes = 0;
    auto valid = [&](const device::Fifo& f) {
      if (slotBytes == 0) slotBytes = f.slotBytes;
      return validFifo(f) && f.slotBytes == slotBytes;
    };
    if (l.hasParent && !(valid(l.toParent) && valid(l.fromParent))) return false;
    for (int i = 0; i < l.nchildren; ++i) {
      if (!valid(l.fromChildren[i]) || !valid(l.toChildren[i])) return false;
    }
  }
  return true;
}

// Launches the kernel that runs l.collective for (dtype, op, protocol), one block per channel.
cudaError_t launch(Launch l, DataType dtype, RedOp op, Protocol protocol, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>(l.nchannels);
  if (!reducing(l.collective)) {
    l.count *= typeSize(dtype);
    if (protocol == Protocol::kSimple) {
      copyingKernel<device::Simple><<<blocks, kRingThreads, 0, stream>>>(l);
    } else {
      copyingKernel<device::LL><<<blocks, kRingThreads, 0, stream>>>(l);
    }
    return cudaGetLastError();
  }
  visitType(dtype, [&]<typename T>() {
    visitOp(op, [&]<typename Op>() {
      if (protocol == Protocol::kSimple) {
        reducingKernel<device::Simple, T, Op><<<blocks, kRingThreads, 0, stream>>>(l);
      } else {
        reducingKernel<device::LL, T, Op><<<blocks, kRingThreads, 0, stream>>>(l);
      }
    });
  });
  return cudaGetLastError();
}

cudaError_t ringAsync(Collective c, const RingCollectiveArgs& a, cudaStream_t stream) {
  if (!validRing(c, a)) return cudaErrorInvalidValue;
  if (a.count == 0) return cudaSuccess;
  Launch l{c,      Algorithm::kRing, a.src, a.dst,       a.count,      a.nranks, a.position,
           a.root, a.nchannels,      {},    a.abortFlag, a.spinBudget, a.status};
  for (int ch = 0; ch < a.nchannels; ++ch) l.ring[ch] = {a.fromPrev[ch], a.toNext[ch]};
  return launch(l, a.dtype, a.op, a.protocol, stream);
}

}  // namespace

cudaError_t ringAllReduceAsync(const RingCollectiveArgs& args, cudaStream_t stream) {
  return ringAsync(Collective::kAllReduce, args, stream);
}
cudaError_t ringReduceScatterAsync(const RingCollectiveArgs& args, cudaStream_t stream) {
  return ringAsync(Collective::kReduceScatter, args, stream);
}
cudaError_t ringAllGatherAsync(const RingCollectiveArgs& args, cudaStream_t stream) {
  return ringAsync(Collective::kAllGather, args, stream);
}
cudaError_t ringBroadcastAsync(const RingCollectiveArgs& args, cudaStream_t stream) {
  return ringAsync(Collective::kBroadcast, args, stream);
}
cudaError_t ringReduceAsync(const RingCollectiveArgs& args, cudaStream_t stream) {
  return ringAsync(Collective::kReduce, args, stream);
}

cudaError_t treeAllReduceAsync(const TreeAllReduceArgs& a, cudaStream_t stream) {
  if (!validTree(a)) return cudaErrorInvalidValue;
  if (a.count == 0) return cudaSuccess;
  Launch l{Collective::kAllReduce,
           Algorithm::kTree,
           a.src,
           a.dst,
           a.count,
           1,
           0,
           0,
           a.nchannels,
           {},
           a.abortFlag,
           a.spinBudget,
           a.status};
  for (int ch = 0; ch < a.nchannels; ++ch) l.tree[ch] = a.links[ch];
  return launch(l, a.dtype, a.op, a.protocol, stream);
}

cudaError_t collectiveBlocksPerSm(Collective collective, DataType dtype, RedOp op,
                                  Protocol protocol, int* blocks) {
  if (!isValid(dtype) || (reducing(collective) && !isValid(op)) || !validProtocol(protocol) ||
      blocks == nullptr) {
    return cudaErrorInvalidValue;
  }
  const bool simple = protocol == Protocol::kSimple;
  if (!reducing(collective)) {
    return simple ? cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                        blocks, copyingKernel<device::Simple>, kRingThreads, 0)
                  : cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, copyingKernel<device::LL>,
                                                                  kRingThreads, 0);
  }
  cudaError_t result = cudaSuccess;
  visitType(dtype, [&]<typename T>() {
    visitOp(op, [&]<typename Op>() {
      result = simple ? cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                            blocks, reducingKernel<device::Simple, T, Op>, kRingThreads, 0)
                      : cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                            blocks, reducingKernel<device::LL, T, Op>, kRingThreads, 0);
    });
  });
  return result;
}

}  // namespace tutti::kernels::cuda
