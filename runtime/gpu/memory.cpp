// Pointer kinds through cuPointerGetAttributes, and the synchronous staging copies.
#include "base/error.hpp"
#include "runtime/gpu/driver.hpp"
#include "runtime/gpu/gpu.hpp"

namespace tutti::runtime::gpu {

BufferKind classify(const void* ptr) {
  if (!ptr || !driverReady()) return {};
  unsigned memoryType = 0;
  int ordinal = -1;
  unsigned managed = 0;
  CUcontext context = nullptr;
  CUpointer_attribute attributes[] = {
      CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
      CU_POINTER_ATTRIBUTE_IS_MANAGED, CU_POINTER_ATTRIBUTE_CONTEXT};
  void* values[] = {&memoryType, &ordinal, &managed, &context};
  // Memory the driver does not know (plain malloc) gives CUDA_SUCCESS with type 0 on current
  // drivers and CUDA_ERROR_INVALID_VALUE on old ones: host memory either way.
  if (driver().pointerAttributes(4, attributes, values, reinterpret_cast<CUdeviceptr>(ptr)) !=
      CUDA_SUCCESS)
    return {};
  if (managed) return {MemoryKind::kManaged, ordinal, context};
  if (memoryType == CU_MEMORYTYPE_DEVICE) return {MemoryKind::kDevice, ordinal, context};
  if (memoryType == CU_MEMORYTYPE_HOST) return {MemoryKind::kRegisteredHost, -1, nullptr};
  return {};
}

void copyToHost(void* host, const void* device, size_t bytes, const BufferKind& owner) {
  if (bytes == 0) return;
  ContextScope scope(static_cast<CUcontext>(owner.context));
  check(driver().copyDtoH(host, reinterpret_cast<CUdeviceptr>(device), bytes), "cuMemcpyDtoH");
}

void copyToDevice(void* device, const void* host, size_t bytes, const BufferKind& owner) {
  if (bytes == 0) return;
  ContextScope scope(static_cast<CUcontext>(owner.context));
  check(driver().copyHtoD(reinterpret_cast<CUdeviceptr>(device), host, bytes), "cuMemcpyHtoD");
}

}  // namespace tutti::runtime::gpu
