// CUDA tensors go through tutti's host-driven forms (request, blocking), which read and write
// device memory from the host: work a stream has queued on a tensor must have run first, and what
// torch queues on a result afterwards must follow tutti's writes. Reached through c10's
// device-generic interface, because Debian's torch has no CUDA library (libc10_cuda) to link
// against; any torch with CUDA registers the implementation behind it (docs/torch.md, CUDA).
#pragma once

#include <c10/core/Device.h>

namespace tutti_torch {

// Returns once everything queued so far on this thread's current stream of device has run.
void waitForCurrentStream(c10::Device device);

}  // namespace tutti_torch
