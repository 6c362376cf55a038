// A benchmark's send or receive buffer: page-aligned and zeroed, in ordinary memory, in
// tutti_mem_alloc memory (--buffers registered, which the direct algorithms read in place), or in
// GPU memory (--device cuda). The benchmark writes inputs and reads results through a host view
// and moves the bytes it touched to and from the device; for host buffers the view is the buffer.
#pragma once

#include <cstddef>
#include <memory>

#include "bench/options.hpp"

namespace tutti::bench {

// The options with --device auto decided on this host: buffers "cuda" for --device cuda, and for
// auto where the CUDA driver sees a GPU and --buffers is host.
BenchOptions resolveDevice(BenchOptions options);
// The GPU a rank's buffers live on: -1 for host buffers, else its local rank modulo the GPUs this
// host has (nccl-tests' choice; several ranks may share one GPU).
int bufferDevice(const BenchOptions& options, int localRank);

class Buffer {
 public:
  // Throws std::runtime_error naming what refused the memory.
  Buffer(size_t bytes, const std::string& kind, int device);
  // What the collectives get.
  unsigned char* data() const { return data_.get(); }
  // Where the benchmark reads and writes the bytes at `offset`.
  unsigned char* host(size_t offset) const;
  // Copies [offset, offset + bytes) of the host view to the buffer, or back; nothing for host
  // buffers.
  void toDevice(size_t offset, size_t bytes) const;
  void fromDevice(size_t offset, size_t bytes) const;

 private:
  std::unique_ptr<unsigned char, void (*)(void*)> data_;
  std::unique_ptr<unsigned char[]> mirror_;  // the host view of device memory; null for host
};

}  // namespace tutti::bench
