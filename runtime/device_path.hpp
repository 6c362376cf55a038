// Collectives on device buffers run as device kernels (gpu/device_ring.hpp): the kernel moves the
// data GPU to GPU (to other hosts through the ring's link proxies) and reduces it there, nothing
// is staged through host memory. The launch happens when the call is made (a group's, at its end),
// so that every rank's kernels go to the GPU in the same (issue) order, and the engine watches each
// one in its turn: a dead peer, an abort, a failure of the communicator or a kernel that does not
// end within the timeout sets the abort flag, which every wait of the kernel polls, and fails the
// operation naming why. Other calls on device buffers are staged (staged_buffers.hpp).
#pragma once

#include <chrono>
#include <memory>
#include <span>
#include <vector>

#include "runtime/communicator.hpp"
#include "runtime/engine.hpp"
#include "runtime/gpu/device_ring.hpp"
#include "runtime/observe/flight_recorder.hpp"
#include "runtime/operations.hpp"
#include "runtime/request.hpp"

namespace tutti::runtime {

// Whether `call` (valid, on device memory of the communicator's device) runs as
// device kernels: TUTTI_GPU_PATH=kernels, libtutti has the kernels, two ranks or more, and a
// ring collective (not alltoall); a forced tree only where all ranks share a host (links to other
// hosts go through the ring's link proxies, which the tree has not).
bool runsAsKernels(const Communicator& comm, const CollectiveCall& call);
// And whether the ranks' GPUs let them run (DeviceSide::kernelPlan: not when ranks share a GPU
// without MPS, or it cannot hold a channel for each): settled at the first call that passes
// runsAsKernels, collective over the ranks; `device` is this rank's.
bool gpusRunKernels(Communicator& comm, int device);
// Whether `call` can run as kernels with nothing collective to set up first: the ring (and the
// tree, for a tree call) connected by an earlier collective. What a group asks: a thread may drive
// several communicators' groups, and a collective set-up would wait for the others it has not
// reached yet. The same on every rank (their earlier calls were the same).
bool kernelsConnected(Communicator& comm, const CollectiveCall& call);

// Runs `call` as device kernels on `device`'s ring: on `stream` (a CUstream) when given, returning
// at once; otherwise on the ring's own stream, in the engine's order, blocking (nullptr returned)
// or as the request returned when `async`.
std::shared_ptr<Request> runAsKernels(Communicator& comm, const CollectiveCall& call, int device,
                                      uint64_t sequence, const OpSignature& signature, bool async,
                                      void* stream);

// A device collective (blocking or request form, or a group's) to be enqueued on the ring's own
// stream.
struct KernelCall {
  CollectiveCall call;
  int device;
  uint64_t sequence;
};
// A collective enqueued on the ring's own stream, held behind `ticket` until its turn: a group
// releases the tickets of all its kernels at once (NCCL launches a group's collectives together)
// and then runs each `watch` in its turn. A group that is not run after all must abandon its
// kernels: they are on the GPU already, and peers that ran the group wait for them.
struct HeldKernel {
  gpu::DeviceRing* ring;
  uint32_t ticket;
  std::shared_ptr<const gpu::KernelRun> run;
  Engine::Task watch;
};
// Enqueues `calls` (one communicator's, in call order, all on device memory of one device) held:
// each run of calls that gpu::fusable lets go together as one kernel (a group's independent
// collectives of one dtype and op: one launch instead of one each), their HeldKernels sharing its
// ticket and run. One HeldKernel per call, in order. A launch that fails fails the communicator
// and abandons the kernels enqueued before it.
std::vector<HeldKernel> holdAsKernels(Communicator& comm, std::span<const KernelCall> calls);
// What a rank whose group was not run does with a held kernel: the communicator fails (saying
// so, with `why`), and the kernel (with every later one) ends at once through the abort flag;
// returns once it has ended (the caller may free its buffers next), or at `deadline`.
void abandonKernel(Communicator& comm, const HeldKernel& held, const Error& why,
                   std::chrono::steady_clock::time_point deadline);

}  // namespace tutti::runtime
