#include "bench/buffer.hpp"

#include <tutti/tutti.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace tutti::bench {
namespace {

void freeRegistered(void* memory) {
  tutti_mem_free(memory);
}

}  // namespace

Buffer::Buffer(size_t bytes, bool registered)
    : data_(nullptr, registered ? freeRegistered : std::free) {
  bytes = std::max<size_t>(bytes, 1);
  void* memory = nullptr;
  if (registered) {
    if (tutti_mem_alloc(&memory, bytes) != tuttiSuccess)
      throw std::runtime_error(tutti_get_last_error());
  } else if ((memory = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096))) {
    std::memset(memory, 0, bytes);
  } else {
    throw std::runtime_error("out of memory for a " + std::to_string(bytes) + "-byte buffer");
  }
  data_.reset(static_cast<unsigned char*>(memory));
}

}  // namespace tutti::bench
