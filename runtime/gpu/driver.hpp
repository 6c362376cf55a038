// The CUDA driver entry points tutti uses, resolved once from the library TUTTI_CUDA_DRIVER
// names (libcuda.so.1 by default) with dlopen: nothing links libcuda, so a machine without an
// NVIDIA driver runs every host path unchanged. Only where the build found the toolkit's cuda.h.
#pragma once

#include <cuda.h>

#include <string>

namespace tutti::runtime::gpu {

struct Driver {
  decltype(&::cuInit) init;
  decltype(&::cuGetErrorString) errorString;
  decltype(&::cuDriverGetVersion) version;
  decltype(&::cuPointerGetAttributes) pointerAttributes;
  decltype(&::cuDeviceGetAttribute) deviceAttribute;
  decltype(&::cuCtxPushCurrent_v2) pushContext;
  decltype(&::cuCtxPopCurrent_v2) popContext;
  decltype(&::cuCtxGetDevice) contextDevice;
  decltype(&::cuStreamGetCtx) streamContext;
  decltype(&::cuMemHostAlloc) hostAlloc;
  decltype(&::cuMemHostGetDevicePointer_v2) hostDevicePointer;
  decltype(&::cuMemFreeHost) freeHost;
  // Host memory of another process made visible to a GPU: FIFOs between GPUs that cannot reach
  // each other peer to peer (shared_host_memory.hpp).
  decltype(&::cuMemHostRegister_v2) hostRegister;
  decltype(&::cuMemHostUnregister) hostUnregister;
  decltype(&::cuDeviceCanAccessPeer) canAccessPeer;
  decltype(&::cuMemcpyDtoH_v2) copyDtoH;  // the _ptds entry points
  decltype(&::cuMemcpyHtoD_v2) copyHtoD;
  decltype(&::cuMemcpyDtoD_v2) copyDtoD;
  decltype(&::cuMemcpyDtoHAsync_v2) copyDtoHAsync;
  decltype(&::cuMemcpyHtoDAsync_v2) copyHtoDAsync;
  decltype(&::cuMemcpyDtoDAsync_v2) copyDtoDAsync;
  decltype(&::cuLaunchHostFunc) launchHostFunc;
  decltype(&::cuStreamWaitValue32_v2) waitValue32;
  decltype(&::cuStreamWriteValue32_v2) writeValue32;
  decltype(&::cuDeviceGetCount) deviceCount;
  decltype(&::cuDeviceGet) device;
  decltype(&::cuDeviceGetUuid_v2) deviceUuid;
  decltype(&::cuDeviceGetPCIBusId) pciBusId;
  decltype(&::cuDevicePrimaryCtxRetain) retainPrimaryContext;
  decltype(&::cuMemAlloc_v2) alloc;
  decltype(&::cuMemFree_v2) free;
  // The virtual memory API: memory other processes map (shared_device_memory.hpp).
  decltype(&::cuMemGetAllocationGranularity) granularity;
  decltype(&::cuMemCreate) create;
  decltype(&::cuMemRelease) release;
  decltype(&::cuMemAddressReserve) reserve;
  decltype(&::cuMemAddressFree) unreserve;
  decltype(&::cuMemMap) map;
  decltype(&::cuMemUnmap) unmap;
  decltype(&::cuMemSetAccess) setAccess;
  decltype(&::cuMemExportToShareableHandle) exportHandle;
  decltype(&::cuMemImportFromShareableHandle) importHandle;
  // The device collectives' kernels (kernel_launch.hpp) and the streams they run on.
  decltype(&::cuCtxGetCurrent) currentContext;
  decltype(&::cuModuleLoadData) loadModule;
  decltype(&::cuModuleGetFunction) moduleFunction;
  decltype(&::cuLaunchKernel) launchKernel;
  decltype(&::cuOccupancyMaxActiveBlocksPerMultiprocessor) occupancy;
  decltype(&::cuStreamCreate) createStream;
  decltype(&::cuStreamDestroy_v2) destroyStream;
  decltype(&::cuStreamQuery) queryStream;
  decltype(&::cuStreamSynchronize) synchronizeStream;
  decltype(&::cuEventCreate) createEvent;
  decltype(&::cuEventDestroy_v2) destroyEvent;
  decltype(&::cuEventRecord) recordEvent;
  decltype(&::cuStreamWaitEvent) waitEvent;
};

// The ready driver; throws as requireDriver() does when there is none.
const Driver& driver();

// The driver's name for result ("CUDA_ERROR_INVALID_VALUE: invalid argument"), or its number.
std::string describe(CUresult result);
// Throws kSystem "`what` failed: <describe(result)>" unless result is CUDA_SUCCESS.
void check(CUresult result, const char* what);

// The primary context of device `ordinal` (the CUDA runtime's), retained once per device for the
// process's lifetime: for memory that belongs to no context (the virtual memory API's mappings).
CUcontext primaryContext(int ordinal);

// Makes a context current on this thread for the scope (copies and enqueues need one).
class ContextScope {
 public:
  explicit ContextScope(CUcontext context);
  ~ContextScope();
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;
};

}  // namespace tutti::runtime::gpu
