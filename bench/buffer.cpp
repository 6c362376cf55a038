#include "bench/buffer.hpp"

#include <tutti/tutti.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "runtime/gpu/gpu.hpp"

namespace tutti::bench {
namespace {

namespace gpu = runtime::gpu;

void freeRegistered(void* memory) {
  tutti_mem_free(memory);
}

void freeDevice(void* memory) {
  gpu::freeDevice(memory);
}

}  // namespace

BenchOptions resolveDevice(BenchOptions options) {
  const bool gpu =
      options.device == "cuda" ||
      (options.device == "auto" && options.buffers == "host" && gpu::deviceCount() > 0);
  if (gpu) options.buffers = "cuda";
  return options;
}

int bufferDevice(const BenchOptions& options, int localRank) {
  if (options.buffers != "cuda") return -1;
  try {
    const int devices = gpu::deviceCount();
    if (devices == 0) gpu::requireDriver();  // says why there is none
    if (devices == 0) throw std::runtime_error("the CUDA driver sees no GPU");
    return localRank % devices;
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("--device cuda: ") + e.what());
  }
}

Buffer::Buffer(size_t bytes, const std::string& kind, int device)
    : data_(nullptr, kind == "registered" ? freeRegistered
                     : kind == "cuda"     ? freeDevice
                                          : std::free) {
  bytes = std::max<size_t>(bytes, 1);
  void* memory = nullptr;
  if (kind == "cuda") {
    memory = gpu::allocateDevice(bytes, device);
    mirror_ = std::make_unique<unsigned char[]>(bytes);  // zeroed
  } else if (kind == "registered") {
    if (tutti_mem_alloc(&memory, bytes) != tuttiSuccess)
      throw std::runtime_error(tutti_get_last_error());
  } else if ((memory = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096))) {
    std::memset(memory, 0, bytes);
  } else {
    throw std::runtime_error("out of memory for a " + std::to_string(bytes) + "-byte buffer");
  }
  data_.reset(static_cast<unsigned char*>(memory));
  toDevice(0, bytes);
}

unsigned char* Buffer::host(size_t offset) const {
  return (mirror_ ? mirror_.get() : data_.get()) + offset;
}

void Buffer::toDevice(size_t offset, size_t bytes) const {
  if (!mirror_) return;
  gpu::copyToDevice(data_.get() + offset, mirror_.get() + offset, bytes,
                    gpu::classify(data_.get()));
}

void Buffer::fromDevice(size_t offset, size_t bytes) const {
  if (!mirror_) return;
  gpu::copyToHost(mirror_.get() + offset, data_.get() + offset, bytes, gpu::classify(data_.get()));
}

}  // namespace tutti::bench
