// kernels/cuda/cuda_kernels.hpp: the device side of the kernels layer. The same operation as
// kernels.hpp's reduce, computed by the same functors (ops.hpp, half.hpp), on GPU memory and
// ordered on a CUDA stream. Needs the CUDA runtime headers; built when the `cuda` option is on.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "kernels/device/fifo.hpp"
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

// One rank's side of a ring all-reduce over device FIFOs (kernels/device/): the host has mapped
// each channel's FIFO from prev and to next (peer GPU memory, or pinned host memory) and zeroed
// them before their first use; FIFOs persist across operations.
struct RingAllReduceArgs {
  const void* src;
  void* dst;  // may be src
  size_t count;
  DataType dtype;
  RedOp op;  // avg folds as sum: the caller divides afterwards
  Protocol protocol;
  int nranks;
  int position;  // in the ring
  int nchannels;
  device::Fifo fromPrev[kMaxChannels];  // [channel], unused with one rank
  device::Fifo toNext[kMaxChannels];
  uint32_t* abortFlag;     // device-visible (mapped host memory); the host sets it nonzero to abort
  uint64_t spinBudget;     // polls one wait may spend (device::kNoSpinBudget: unbounded)
  device::Status* status;  // device-visible, nchannels entries: each channel's result
};

// Enqueues one rank's ring all-reduce on stream: one block of kRingThreads per channel, each
// running device::ringAllReduce over its FIFOs, writing its Status when it ends (an abort or a
// spent budget ends it early instead of spinning). Returns cudaErrorInvalidValue for arguments
// out of range (nothing enqueued), else the launch's status. count == 0 enqueues nothing.
cudaError_t ringAllReduceAsync(const RingAllReduceArgs& args, cudaStream_t stream);

// How many blocks of the ring kernel for (dtype, op, protocol) one multiprocessor of the current
// device holds at once: ranks sharing a GPU wait on each other's blocks, so all of them (ranks x
// channels) must be resident together. cudaErrorInvalidValue for arguments out of range.
cudaError_t ringAllReduceBlocksPerSm(DataType dtype, RedOp op, Protocol protocol, int* blocks);

}  // namespace tutti::kernels::cuda
