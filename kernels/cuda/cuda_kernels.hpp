// kernels/cuda/cuda_kernels.hpp: the device side of the kernels layer. The same operation as
// kernels.hpp's reduce, computed by the same functors (ops.hpp, half.hpp), on GPU memory and
// ordered on a CUDA stream. Needs the CUDA runtime headers; built when the `cuda` option is on.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "kernels/device/fifo.hpp"
#include "kernels/device/tree.hpp"
#include "kernels/kernels.hpp"

namespace tutti::kernels::cuda {

constexpr int kMaxSrcs = 8;
constexpr int kMaxDsts = 2;

// As kernels::reduce, enqueued on stream: for every i < count, srcs[0][i] op ... op
// srcs[nsrcs-1][i], folded left to right, written to each dst (avg folds as sum). Pointers are
// device (or managed/mapped) memory, at any alignment; a dst may alias a src. 1 <= nsrcs <=
// kMaxSrcs, 1 <= ndsts <= kMaxDsts. Returns cudaErrorInvalidValue for arguments out of range
// (nothing enqueued), else the launch's status. count == 0 enqueues nothing.
cudaError_t reduceAsync(void* const* dsts, int ndsts, const void* const* srcs, int nsrcs,
                        size_t count, DataType dtype, RedOp op, cudaStream_t stream);

enum class Protocol : int { kSimple = 0, kLL = 1 };

constexpr int kMaxChannels = 16;
constexpr int kRingThreads = 256;  // per block, i.e. per channel

// The collectives of the device protocol (kernels/device/): all-reduce over a ring or a tree,
// reduce-scatter and allgather over a ring, broadcast and reduce as chains along the ring.
enum class Collective : int { kAllReduce, kReduceScatter, kAllGather, kBroadcast, kReduce };

// One rank's side of a collective over the ring's device FIFOs: the host has mapped each
// channel's FIFO from prev and to next (peer GPU memory, or pinned host memory) and zeroed them
// before their first use; FIFOs persist across operations. Buffers follow the C API
// (include/tutti/tutti.h), with blocks in ring order: reduce-scatter reads nranks blocks of count
// from src and writes count to dst, or in place (dst == src) to src + position * count; allgather
// reads count from src and writes nranks blocks to dst, in place when src == dst + position *
// count; broadcast reads the root's src; reduce writes the root's dst only (null elsewhere).
struct RingCollectiveArgs {
  const void* src;
  void* dst;
  size_t count;
  DataType dtype;
  RedOp op;  // the reducing collectives' (avg folds as sum: the caller divides afterwards)
  Protocol protocol;
  int nranks;
  int position;  // in the ring
  int root;      // broadcast, reduce: the root's position in the ring
  int nchannels;
  device::Fifo fromPrev[kMaxChannels];  // [channel], unused with one rank
  device::Fifo toNext[kMaxChannels];
  uint32_t* abortFlag;     // device-visible (mapped host memory); the host sets it nonzero to abort
  uint64_t spinBudget;     // polls one wait may spend (device::kNoSpinBudget: unbounded)
  device::Status* status;  // device-visible, nchannels entries: each channel's result
};

// Enqueue one rank's collective on stream: one block of kRingThreads per channel, each running
// the device schedule over its FIFOs and writing its Status when it ends (an abort or a spent
// budget ends it early instead of spinning). Return cudaErrorInvalidValue for arguments out of
// range (nothing enqueued), else the launch's status. count == 0 enqueues nothing.
cudaError_t ringAllReduceAsync(const RingCollectiveArgs& args, cudaStream_t stream);
cudaError_t ringReduceScatterAsync(const RingCollectiveArgs& args, cudaStream_t stream);
cudaError_t ringAllGatherAsync(const RingCollectiveArgs& args, cudaStream_t stream);
cudaError_t ringBroadcastAsync(const RingCollectiveArgs& args, cudaStream_t stream);
cudaError_t ringReduceAsync(const RingCollectiveArgs& args, cudaStream_t stream);

// One rank's side of a tree all-reduce: each channel's links to its parent and children (the
// host builds the tree, e.g. device::binaryTree, and maps the FIFOs; all with one slot size).
struct TreeAllReduceArgs {
  const void* src;
  void* dst;  // may be src
  size_t count;
  DataType dtype;
  RedOp op;
  Protocol protocol;
  int nchannels;
  device::TreeLinks links[kMaxChannels];  // [channel]
  uint32_t* abortFlag;
  uint64_t spinBudget;
  device::Status* status;
};

cudaError_t treeAllReduceAsync(const TreeAllReduceArgs& args, cudaStream_t stream);

// How many blocks of the kernel that runs `collective` for (dtype, op, protocol) one
// multiprocessor of the current device holds at once: ranks sharing a GPU wait on each other's
// blocks, so all of them (ranks x channels) must be resident together. cudaErrorInvalidValue for
// arguments out of range.
cudaError_t collectiveBlocksPerSm(Collective collective, DataType dtype, RedOp op,
                                  Protocol protocol, int* blocks);

}  // namespace tutti::kernels::cuda
