// kernels/cuda/ring_kernel.cu: the ring all-reduce kernel. Each block runs one channel of
// device::ringAllReduce (kernels/device/ring_allreduce.hpp), the very schedule, primitives and
// protocols that the CPU-thread tests run, with a thread block as the group. One kernel per
// protocol x dtype x op (avg is sum); the rank, ring and sizes are runtime values.
#include <cstdint>

#include "kernels/cuda/cuda_kernels.hpp"
#include "kernels/device/group.hpp"
#include "kernels/device/ll.hpp"
#include "kernels/device/ring_allreduce.hpp"
#include "kernels/device/simple.hpp"
#include "kernels/ops.hpp"

namespace tutti::kernels::cuda {
namespace {

template <typename Proto, typename T, typename Op>
__global__ void __launch_bounds__(kRingThreads) ringAllReduceKernel(RingAllReduceArgs args) {
  const int channel = static_cast<int>(blockIdx.x);
  const device::RingArgs<T> ring{static_cast<const T*>(args.src),
                                 static_cast<T*>(args.dst),
                                 args.count,
                                 args.nranks,
                                 args.position,
                                 0,
                                 channel,
                                 args.nchannels,
                                 args.fromPrev[channel],
                                 args.toNext[channel],
                                 {args.abortFlag, args.spinBudget}};
  const device::Status status = device::ringAllReduce<Proto, T, Op>(device::BlockGroup{}, ring);
  if (threadIdx.x == 0) args.status[channel] = status;
}

bool validFifo(const device::Fifo& f) {
  return f.head != nullptr && f.tail != nullptr && f.slots != nullptr && f.nslots > 0 &&
         f.slotBytes >= 32 && f.slotBytes % 16 == 0 &&
         reinterpret_cast<uintptr_t>(f.slots) % 16 == 0;
}

bool validArgs(const RingAllReduceArgs& a) {
  if (!isValid(a.dtype) || !isValid(a.op) || a.nranks < 1 || a.position < 0 ||
      a.position >= a.nranks || a.nchannels < 1 || a.nchannels > kMaxChannels ||
      a.abortFlag == nullptr || a.status == nullptr ||
      (a.protocol != Protocol::kSimple && a.protocol != Protocol::kLL)) {
    return false;
  }
  for (int c = 0; c < a.nchannels && a.nranks > 1; ++c) {
    if (!validFifo(a.fromPrev[c]) || !validFifo(a.toNext[c])) return false;
  }
  return true;
}

}  // namespace

cudaError_t ringAllReduceAsync(const RingAllReduceArgs& args, cudaStream_t stream) {
  if (!validArgs(args)) return cudaErrorInvalidValue;
  if (args.count == 0) return cudaSuccess;
  const auto blocks = static_cast<unsigned>(args.nchannels);
  visitType(args.dtype, [&]<typename T>() {
    visitOp(args.op, [&]<typename Op>() {
      if (args.protocol == Protocol::kSimple) {
        ringAllReduceKernel<device::Simple, T, Op><<<blocks, kRingThreads, 0, stream>>>(args);
      } else {
        ringAllReduceKernel<device::LL, T, Op><<<blocks, kRingThreads, 0, stream>>>(args);
      }
    });
  });
  return cudaGetLastError();
}

cudaError_t ringAllReduceBlocksPerSm(DataType dtype, RedOp op, Protocol protocol, int* blocks) {
  if (!isValid(dtype) || !isValid(op) || blocks == nullptr ||
      (protocol != Protocol::kSimple && protocol != Protocol::kLL)) {
    return cudaErrorInvalidValue;
  }
  cudaError_t result = cudaSuccess;
  visitType(dtype, [&]<typename T>() {
    visitOp(op, [&]<typename Op>() {
      result = protocol == Protocol::kSimple
                   ? cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                         blocks, ringAllReduceKernel<device::Simple, T, Op>, kRingThreads, 0)
                   : cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                         blocks, ringAllReduceKernel<device::LL, T, Op>, kRingThreads, 0);
    });
  });
  return result;
}

}  // namespace tutti::kernels::cuda
