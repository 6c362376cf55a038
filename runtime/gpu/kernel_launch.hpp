// The device collectives' kernels (kernels/device/launch.hpp, compiled into the fatbin that
// libtutti embeds) enqueued on a stream through the driver: the module is loaded once per context
// (cuModuleLoadData), each kernel found by name, launched with cuLaunchKernel, one block of
// kBlockThreads per channel. Nothing here links the CUDA runtime. Only in builds with the GPU path
// (cuda.h and CCCL found).
#pragma once

#include <cuda.h>

#include <string>

#include "kernels/device/launch.hpp"

namespace tutti::runtime::gpu {

using kernels::device::Collective;
using kernels::device::Protocol;

using kernels::device::kMaxWorks;
using kernels::device::Work;  // a collective of a launch: its buffers, count (elements) and root

// One rank's side of up to kMaxWorks collectives over the ring's device FIFOs, run one after the
// other in one launch (a group's independent collectives: NCCL's aggregation): the host has mapped
// each channel's FIFO from prev and to next (peer GPU memory, or pinned host memory) and zeroed
// them before their first use; FIFOs persist across operations. Every work runs the same kernel
// (its reducing collectives, or its copying ones: kernelName alike). Buffers follow the C API
// (include/tutti/tutti.h), blocks by rank: reduce-scatter reads nranks blocks of count from src
// and writes count to dst, or in place (dst == src) to src + rank * count; allgather reads count
// from src and writes nranks blocks to dst, in place when src == dst + rank * count; broadcast
// reads the root's src; reduce writes the root's dst only (null elsewhere). A work's root is a
// rank. Each channel runs a ring of its own (`ring`): its FIFOs, this rank's position in it, and
// the rank at each position (`ranks`: device memory of nranks entries, a permutation of
// 0..nranks-1), or the position itself when `ranks` is null.
struct RingCollectiveArgs {
  kernels::DataType dtype;
  kernels::RedOp op;  // the reducing collectives' (avg folds as sum: the caller divides afterwards)
  Protocol protocol;
  int nranks;
  int rank;  // this one's
  int nworks;
  Work works[kMaxWorks];
  int nchannels;
  kernels::device::RingLinks ring[kernels::device::kMaxChannels];  // [channel]
  uint32_t* abortFlag;  // device-visible (mapped host memory); the host sets it nonzero to abort
  uint64_t spinBudget;  // polls one wait may spend (device::kNoSpinBudget: unbounded)
  kernels::device::Status* status;  // device-visible, nchannels entries: each channel's result
};

// One rank's side of up to kMaxWorks tree all-reduces (works of kAllReduce): each channel's links
// to its parent and children (the host builds the tree, e.g. device::binaryTree, and maps the
// FIFOs; all with one slot size).
struct TreeAllReduceArgs {
  kernels::DataType dtype;
  kernels::RedOp op;
  Protocol protocol;
  int nworks;
  Work works[kMaxWorks];
  int nchannels;
  kernels::device::TreeLinks links[kernels::device::kMaxChannels];  // [channel]
  uint32_t* abortFlag;
  uint64_t spinBudget;
  kernels::device::Status* status;
};

// What is wrong with the arguments ("" when nothing): a dtype or op out of range, a protocol,
// ranks, position, works (none, too many, of different kernels, not all-reduces on a tree), a
// root, channels, FIFOs, a tree node's links and slot sizes, null buffers, a count whose blocks
// overflow. A work's problem names the work where there are several.
std::string ringProblem(const RingCollectiveArgs& args);
std::string treeProblem(const TreeAllReduceArgs& args);

// Enqueue one rank's works on `stream`, one kernel: one block per channel, each running the device
// schedule of every work in turn over its FIFOs and writing its status (kRunning when it starts,
// then its result: an abort or a spent budget ends it early instead of spinning).
// kInvalidArgument naming what is wrong (ringProblem) before anything else, nothing launched;
// works of count 0 are left out, and none left enqueues nothing; then kSystem when there is no
// driver or kernels (whyNoKernels), or the driver refuses.
void launchRing(const RingCollectiveArgs& args, CUstream stream);
void launchTreeAllReduce(const TreeAllReduceArgs& args, CUstream stream);

// avg's last step on the device, as kernels::avgFinish: data[i] = data[i] / divisor for `count`
// elements of dtype, enqueued on stream. kInvalidArgument for a dtype out of range, a divisor
// below 1 or NULL data with elements to divide; count 0 enqueues nothing.
void launchDivide(void* data, size_t count, kernels::DataType dtype, int divisor, CUstream stream);

// How many blocks of the kernel that runs `collective` for (dtype, op, protocol) one
// multiprocessor of the current context's device holds at once: ranks sharing a GPU wait on each
// other's blocks, so all of them (ranks x channels) must be resident together.
int collectiveBlocksPerSm(Collective collective, kernels::DataType dtype, kernels::RedOp op,
                          Protocol protocol);
// The fewest blocks of any of the collectives' kernels one multiprocessor holds: what a rank
// sharing the GPU can count on, whatever it launches.
int fewestCollectiveBlocksPerSm();

// The kernel that runs `collective` for (dtype, op, protocol): tutti_copy_<protocol> or
// tutti_reduce_<protocol>_<dtype>_<op> (avg: sum); avg's division: tutti_divide_<dtype>.
std::string kernelName(Collective collective, kernels::DataType dtype, kernels::RedOp op,
                       Protocol protocol);
std::string divideKernelName(kernels::DataType dtype);

}  // namespace tutti::runtime::gpu
