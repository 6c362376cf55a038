#include "integrations/torch/src/cuda_sync.hpp"

#include <c10/core/impl/VirtualGuardImpl.h>

namespace tutti_torch {

void waitForCurrentStream(c10::Device device) {
  const c10::impl::VirtualGuardImpl guard(device.type());
  guard.synchronizeStream(guard.getStream(device));
}

}  // namespace tutti_torch
