// Pointer kinds through cuPointerGetAttributes, the synchronous staging copies, and device memory
// for programs that have no CUDA runtime.
#include <map>
#include <mutex>

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
  // Mappings of the virtual memory API (cuMemCreate + cuMemMap: CUDA IPC imports, PyTorch's
  // expandable segments) belong to no context: their device's primary context serves the copies.
  if ((managed || memoryType == CU_MEMORYTYPE_DEVICE) && !context && ordinal >= 0)
    context = primaryContext(ordinal);
  if (managed) return {MemoryKind::kManaged, ordinal, context};
  if (memoryType == CU_MEMORYTYPE_DEVICE) return {MemoryKind::kDevice, ordinal, context};
  if (memoryType == CU_MEMORYTYPE_HOST) return {MemoryKind::kRegisteredHost, -1, nullptr};
  return {};
}

CUcontext primaryContext(int ordinal) {
  static std::mutex mutex;
  static std::map<int, CUcontext> retained;
  std::lock_guard lock(mutex);
  CUcontext& context = retained[ordinal];
  if (!context) {
    CUdevice device = 0;
    check(driver().device(&device, ordinal), "cuDeviceGet");
    check(driver().retainPrimaryContext(&context, device), "cuDevicePrimaryCtxRetain");
  }
  return context;
}

int deviceCount() {
  if (!driverReady()) return 0;
  int count = 0;
  check(driver().deviceCount(&count), "cuDeviceGetCount");
  return count;
}

void* allocateDevice(size_t bytes, int ordinal) {
  const int count = deviceCount();
  if (ordinal < 0 || ordinal >= count)
    raise(ErrorCode::kInvalidArgument, "device {} does not exist: the driver sees {} device(s)",
          ordinal, count);
  if (bytes == 0) raise(ErrorCode::kInvalidArgument, "device memory of 0 bytes");
  ContextScope scope(primaryContext(ordinal));
  CUdeviceptr memory = 0;
  check(driver().alloc(&memory, bytes), "cuMemAlloc");
  return reinterpret_cast<void*>(memory);
}

void freeDevice(void* ptr) {
  if (!ptr) return;
  const BufferKind owner = classify(ptr);
  if (owner.kind != MemoryKind::kDevice)
    raise(ErrorCode::kInvalidArgument, "{} is not device memory", fmt::ptr(ptr));
  ContextScope scope(static_cast<CUcontext>(owner.context));
  check(driver().free(reinterpret_cast<CUdeviceptr>(ptr)), "cuMemFree");
}

namespace {

// The driver returns from a copy out of pageable memory, or within the device, before its bytes
// land; these copies are synchronous: they return once the bytes are there, for kernels on any
// stream and for other processes to read.
void landed() {
  check(driver().synchronizeStream(CU_STREAM_PER_THREAD), "cuStreamSynchronize");
}

}  // namespace

void copyToHost(void* host, const void* device, size_t bytes, const BufferKind& owner) {
  if (bytes == 0) return;
  ContextScope scope(static_cast<CUcontext>(owner.context));
  check(driver().copyDtoH(host, reinterpret_cast<CUdeviceptr>(device), bytes), "cuMemcpyDtoH");
}

void copyToDevice(void* device, const void* host, size_t bytes, const BufferKind& owner) {
  if (bytes == 0) return;
  ContextScope scope(static_cast<CUcontext>(owner.context));
  check(driver().copyHtoD(reinterpret_cast<CUdeviceptr>(device), host, bytes), "cuMemcpyHtoD");
  landed();
}

void copyOnDevice(void* to, const void* from, size_t bytes, const BufferKind& owner) {
  if (bytes == 0) return;
  ContextScope scope(static_cast<CUcontext>(owner.context));
  check(driver().copyDtoD(reinterpret_cast<CUdeviceptr>(to), reinterpret_cast<CUdeviceptr>(from),
                          bytes),
        "cuMemcpyDtoD");
  landed();
}

}  // namespace tutti::runtime::gpu
