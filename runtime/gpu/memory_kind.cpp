#include "runtime/gpu/gpu.hpp"

namespace tutti::runtime::gpu {

const char* kindName(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::kHost: return "host memory";
    case MemoryKind::kRegisteredHost: return "registered host memory";
    case MemoryKind::kManaged: return "managed memory";
    case MemoryKind::kDevice: return "device memory";
  }
  return "unknown memory";
}

}  // namespace tutti::runtime::gpu
