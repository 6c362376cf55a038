// A communicator's pinned host memory, in which device buffers are staged (copied to, reduced in,
// copied back from): page-locked and mapped for every device, allocated on first need in blocks
// of powers of two, lent out and returned, freed when the communicator is destroyed.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>

namespace tutti::runtime::gpu {

class PinnedPool {
  struct State;

 public:
  // A block on loan; returns to the pool when destroyed. Returning takes a brief lock and no CUDA
  // call, so a stream's host function may end a lease.
  class Lease {
   public:
    Lease(std::shared_ptr<State> state, void* data, size_t size);
    ~Lease();
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    void* data() const { return data_; }
    size_t size() const { return size_; }

   private:
    std::shared_ptr<State> state_;
    void* data_;
    size_t size_;
  };

  PinnedPool();
  ~PinnedPool();
  PinnedPool(const PinnedPool&) = delete;
  PinnedPool& operator=(const PinnedPool&) = delete;

  // At least `bytes` (> 0), allocated in `context` (a CUcontext) when no free block fits.
  std::unique_ptr<Lease> take(size_t bytes, void* context);
  // Waits up to `timeout` for every lease to end, then frees every block. A lease still out then
  // (a stream that never reached its end) may still be written by the GPU: its memory is left
  // allocated, with a warning, rather than freed under the GPU.
  void close(std::chrono::milliseconds timeout);

 private:
  std::shared_ptr<State> state_;
};

}  // namespace tutti::runtime::gpu
