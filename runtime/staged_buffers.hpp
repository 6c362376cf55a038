// Device buffers of one operation, staged through pinned host memory (Gloo's way for its CUDA
// algorithms): the bytes the operation reads are copied from the device into pinned memory, the
// host collective runs there, and the bytes it writes are copied back. One piece of code for every
// collective and send/recv: an operation is described by the two ranges it touches.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "runtime/communicator.hpp"
#include "runtime/gpu/gpu.hpp"
#include "runtime/gpu/pinned_pool.hpp"

namespace tutti::runtime {

struct BufferRange {
  const void* data = nullptr;
  size_t bytes = 0;  // 0: not touched on this rank
  const char* name = "";
};

// The bytes an operation reads and those it writes on this rank (they may overlap: in place).
struct BufferUse {
  BufferRange read;
  BufferRange written;
};

// Where an operation's buffers are: nullopt when the host may touch them all (host, registered or
// managed memory, or no driver), else the device memory that owns the copies. One call takes
// host or device buffers, not both; device buffers are on the communicator's device (the first
// device buffer's, which binds it). Otherwise kInvalidArgument naming the buffers, kinds and
// ordinals.
std::optional<gpu::BufferKind> devicePlacement(Communicator& comm, const char* what,
                                               const BufferUse& use);
// The stream forms': every touched buffer is device or managed memory on `device` (the stream's).
void checkStreamPlacement(Communicator& comm, const char* what, const BufferUse& use, int device);

class StagedBuffers {
 public:
  StagedBuffers(gpu::PinnedPool& pool, const BufferUse& use, const gpu::BufferKind& owner);
  // The staging address of a pointer into a touched range; any other pointer unchanged.
  void* map(const void* user) const;
  // The read range into pinned memory, and the written range back, on this thread.
  void copyIn() const;
  void copyOut() const;
  const BufferUse& use() const { return use_; }

 private:
  struct Region {
    const char* user;
    size_t bytes;
    std::unique_ptr<gpu::PinnedPool::Lease> lease;
  };
  void addRegion(const char* begin, const char* end, gpu::PinnedPool& pool);

  BufferUse use_;
  gpu::BufferKind owner_;
  std::vector<Region> regions_;  // overlapping ranges share one
};

}  // namespace tutti::runtime
