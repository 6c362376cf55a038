#include "base/prefault.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace tutti {

void prefault(void* address, size_t bytes) {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(address);
  const uintptr_t end = begin + bytes;
  // The first aligned word of each page the range holds one of.
  for (uintptr_t at = (begin + 3) & ~uintptr_t{3}; at + sizeof(uint32_t) <= end;
       at = (at & ~(page - 1)) + page)
    std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(at))
        .fetch_or(0, std::memory_order_relaxed);
}

}  // namespace tutti
