// kernels/cuda/cuda_kernels.hpp: the device side of the kernels layer. The same operation as
// kernels.hpp's reduce, computed by the same functors (ops.hpp, half.hpp), on GPU memory and
// ordered on a CUDA stream. Needs the CUDA runtime headers; built when the `cuda` option is on.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

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

}  // namespace tutti::kernels::cuda
