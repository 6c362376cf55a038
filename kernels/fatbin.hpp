// kernels/fatbin.hpp: the device collectives' kernels (kernels/cuda/collective_kernel.cu) as the
// fatbin nvcc built for the gpu_arch list, embedded in libtutti so that the runtime loads them
// through the driver (cuModuleLoadData) with no CUDA runtime linked. Empty where the build had
// no nvcc.
#pragma once

#include <cstddef>

namespace tutti::kernels {

struct Image {
  const unsigned char* data;
  size_t bytes;  // 0: built without nvcc
};

Image collectiveFatbin();

}  // namespace tutti::kernels
