// A benchmark's send or receive buffer: page-aligned and zeroed, in ordinary memory or, for
// --buffers registered, in tutti_mem_alloc memory (which the direct algorithms read in place).
#pragma once

#include <cstddef>
#include <memory>

namespace tutti::bench {

class Buffer {
 public:
  // Throws std::runtime_error naming what refused the memory.
  Buffer(size_t bytes, bool registered);
  unsigned char* data() const { return data_.get(); }

 private:
  std::unique_ptr<unsigned char, void (*)(void*)> data_;
};

}  // namespace tutti::bench
