// kernels/cuda/collective_kernel.cu: the device protocol's collectives as CUDA kernels, compiled
// into a fatbin that libtutti embeds and loads through the driver (runtime/gpu/kernel_launch.cpp).
// Each block runs one channel of kernels/device/launch.hpp's schedules, for each collective of the
// launch in turn, the very code that the CPU-thread tests and the CPU stand-in driver run, with the
// thread block as the group.
//
// Two kernels per protocol and dtype x op, to keep nvcc's time and the code in check: the
// reducing collectives (ring and tree all-reduce, reduce-scatter, reduce) share one kernel that
// switches on the collective at run time, so the primitives' chunk mover is compiled once per
// dtype x op, not once per collective; allgather and broadcast reduce nothing and share one
// kernel per protocol that moves bytes; avg's division is a kernel per dtype. extern "C", so that
// the host finds them by name.
#include "kernels/device/group.hpp"
#include "kernels/device/launch.hpp"

namespace tutti::kernels::device {
namespace {

// The group's first thread says when the channel starts and how it ended (the host's watch).
__device__ void report(const Launch& l, Status status) {
  if (threadIdx.x == 0) l.status[blockIdx.x] = status;
}

template <typename Proto, typename T, typename Op>
__device__ void reducingBlock(const Launch& l) {
  report(l, kRunning);
  const auto channel = static_cast<int>(blockIdx.x);
  report(l, runWorks(BlockGroup{}, l, channel, [&](const Work& w) {
           return runReducing<Proto, T, Op>(BlockGroup{}, l, w, channel);
         }));
}

template <typename Proto>
__device__ void copyingBlock(const Launch& l) {
  report(l, kRunning);
  const auto channel = static_cast<int>(blockIdx.x);
  report(l, runWorks(BlockGroup{}, l, channel, [&](const Work& w) {
           return runCopying<Proto>(BlockGroup{}, l, w, channel);
         }));
}

template <typename T>
__device__ void dividingBlock(const Launch& l) {
  runDivide<T>(BlockGroup{}, l, static_cast<int>(blockIdx.x));
}

}  // namespace
}  // namespace tutti::kernels::device

#define TUTTI_DEFINE_REDUCING(proto, Proto, tname, T, oname, Op)                                 \
  extern "C" __global__ void __launch_bounds__(tutti::kernels::device::kBlockThreads)            \
      tutti_reduce_##proto##_##tname##_##oname(tutti::kernels::device::Launch l) {               \
    tutti::kernels::device::reducingBlock<tutti::kernels::device::Proto, T, tutti::kernels::Op>( \
        l);                                                                                      \
  }
#define TUTTI_DEFINE_COPYING(proto, Proto)                                            \
  extern "C" __global__ void __launch_bounds__(tutti::kernels::device::kBlockThreads) \
      tutti_copy_##proto(tutti::kernels::device::Launch l) {                          \
    tutti::kernels::device::copyingBlock<tutti::kernels::device::Proto>(l);           \
  }

#define TUTTI_DEFINE_DIVIDING(divide, tname, T)                                       \
  extern "C" __global__ void __launch_bounds__(tutti::kernels::device::kBlockThreads) \
      tutti_divide_##tname(tutti::kernels::device::Launch l) {                        \
    tutti::kernels::device::dividingBlock<T>(l);                                      \
  }

TUTTI_REDUCING_KERNELS(TUTTI_DEFINE_REDUCING)
TUTTI_COPYING_KERNELS(TUTTI_DEFINE_COPYING)
TUTTI_DIVIDING_KERNELS(TUTTI_DEFINE_DIVIDING)
