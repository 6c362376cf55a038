// kernels/device/group.hpp: the "thread group" that runs one channel's schedule. On the GPU it is
// a thread block; in the CPU tests it is one thread. The schedule and the primitives only ask a
// group for its threads' index and count, and to agree on a status (a barrier that also tells
// every thread whether any of them failed, and how).
#pragma once

#include "kernels/device/wait.hpp"

namespace tutti::kernels::device {

// One CPU thread standing in for a thread block.
struct HostGroup {
  int index() const { return 0; }
  int size() const { return 1; }
  Status agree(Status s) const { return s; }
};

#if defined(__CUDACC__)
// A thread block: threadIdx.x of blockDim.x. agree() is a barrier: a failure in any thread
// (kAborted before kTimedOut) becomes every thread's result. The host pass compiles these too
// (the templates are __host__ __device__); it never runs them.
struct BlockGroup {
  TUTTI_HOST_DEVICE int index() const {
#if defined(__CUDA_ARCH__)
    return static_cast<int>(threadIdx.x);
#else
    return 0;
#endif
  }
  TUTTI_HOST_DEVICE int size() const {
#if defined(__CUDA_ARCH__)
    return static_cast<int>(blockDim.x);
#else
    return 1;
#endif
  }
  TUTTI_HOST_DEVICE Status agree(Status s) const {
#if defined(__CUDA_ARCH__)
    if (!__syncthreads_or(s != Status::kOk)) return Status::kOk;
    return __syncthreads_or(s == Status::kAborted) ? Status::kAborted : Status::kTimedOut;
#else
    return s;
#endif
  }
};
#endif

}  // namespace tutti::kernels::device
