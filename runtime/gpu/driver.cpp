#include "runtime/gpu/driver.hpp"

#include <dlfcn.h>

#include <mutex>

#include "base/config.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "runtime/gpu/gpu.hpp"

namespace tutti::runtime::gpu {
namespace {

std::string describeWith(const Driver& d, CUresult result) {
  const char* text = nullptr;
  if (d.errorString && d.errorString(result, &text) == CUDA_SUCCESS && text)
    return fmt::format("{} (CUDA error {})", text, static_cast<int>(result));
  return fmt::format("CUDA error {}", static_cast<int>(result));
}

struct Loaded {
  Driver driver{};
  std::string unusable;  // why the driver cannot be used; "" when it can
};

// Resolves every entry point; the first one missing is why the driver cannot be used.
template <typename Function>
bool resolve(void* handle, const char* symbol, Function& out, std::string& unusable) {
  out = reinterpret_cast<Function>(dlsym(handle, symbol));
  if (!out && unusable.empty())
    unusable = fmt::format("it lacks {} (a driver older than 11.7?)", symbol);
  return out != nullptr;
}

Loaded load() {
  Loaded loaded;
  const std::string name = config::getString("TUTTI_CUDA_DRIVER");
  if (name == "none") {
    loaded.unusable = "TUTTI_CUDA_DRIVER=none turns the GPU path off";
    return loaded;
  }
  // Never closed: the driver keeps process-wide state.
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    loaded.unusable = fmt::format(
        "the CUDA driver {} cannot be loaded ({}): no NVIDIA driver on this machine? "
        "TUTTI_CUDA_DRIVER names another library",
        name, dlerror());
    return loaded;
  }
  Driver& d = loaded.driver;
  std::string missing;
  resolve(handle, "cuInit", d.init, missing);
  resolve(handle, "cuGetErrorString", d.errorString, missing);
  resolve(handle, "cuDriverGetVersion", d.version, missing);
  resolve(handle, "cuPointerGetAttributes", d.pointerAttributes, missing);
  resolve(handle, "cuDeviceGetAttribute", d.deviceAttribute, missing);
  resolve(handle, "cuCtxPushCurrent_v2", d.pushContext, missing);
  resolve(handle, "cuCtxPopCurrent_v2", d.popContext, missing);
  resolve(handle, "cuCtxGetDevice", d.contextDevice, missing);
  resolve(handle, "cuStreamGetCtx", d.streamContext, missing);
  resolve(handle, "cuMemHostAlloc", d.hostAlloc, missing);
  resolve(handle, "cuMemHostGetDevicePointer_v2", d.hostDevicePointer, missing);
  resolve(handle, "cuMemFreeHost", d.freeHost, missing);
  resolve(handle, "cuMemHostRegister_v2", d.hostRegister, missing);
  resolve(handle, "cuMemHostUnregister", d.hostUnregister, missing);
  resolve(handle, "cuDeviceCanAccessPeer", d.canAccessPeer, missing);
  resolve(handle, "cuMemcpyDtoH_v2_ptds", d.copyDtoH, missing);
  resolve(handle, "cuMemcpyHtoD_v2_ptds", d.copyHtoD, missing);
  resolve(handle, "cuMemcpyDtoD_v2_ptds", d.copyDtoD, missing);
  resolve(handle, "cuMemcpyDtoHAsync_v2", d.copyDtoHAsync, missing);
  resolve(handle, "cuMemcpyHtoDAsync_v2", d.copyHtoDAsync, missing);
  resolve(handle, "cuMemcpyDtoDAsync_v2", d.copyDtoDAsync, missing);
  resolve(handle, "cuLaunchHostFunc", d.launchHostFunc, missing);
  resolve(handle, "cuStreamWaitValue32_v2", d.waitValue32, missing);
  resolve(handle, "cuStreamWriteValue32_v2", d.writeValue32, missing);
  resolve(handle, "cuDeviceGetCount", d.deviceCount, missing);
  resolve(handle, "cuDeviceGet", d.device, missing);
  resolve(handle, "cuDeviceGetUuid_v2", d.deviceUuid, missing);
  resolve(handle, "cuDeviceGetPCIBusId", d.pciBusId, missing);
  resolve(handle, "cuDevicePrimaryCtxRetain", d.retainPrimaryContext, missing);
  resolve(handle, "cuMemAlloc_v2", d.alloc, missing);
  resolve(handle, "cuMemFree_v2", d.free, missing);
  resolve(handle, "cuMemGetAllocationGranularity", d.granularity, missing);
  resolve(handle, "cuMemCreate", d.create, missing);
  resolve(handle, "cuMemRelease", d.release, missing);
  resolve(handle, "cuMemAddressReserve", d.reserve, missing);
  resolve(handle, "cuMemAddressFree", d.unreserve, missing);
  resolve(handle, "cuMemMap", d.map, missing);
  resolve(handle, "cuMemUnmap", d.unmap, missing);
  resolve(handle, "cuMemSetAccess", d.setAccess, missing);
  resolve(handle, "cuMemExportToShareableHandle", d.exportHandle, missing);
  resolve(handle, "cuMemImportFromShareableHandle", d.importHandle, missing);
  resolve(handle, "cuCtxGetCurrent", d.currentContext, missing);
  resolve(handle, "cuModuleLoadData", d.loadModule, missing);
  resolve(handle, "cuModuleGetFunction", d.moduleFunction, missing);
  resolve(handle, "cuLaunchKernel", d.launchKernel, missing);
  resolve(handle, "cuOccupancyMaxActiveBlocksPerMultiprocessor", d.occupancy, missing);
  resolve(handle, "cuStreamCreate", d.createStream, missing);
  resolve(handle, "cuStreamDestroy_v2", d.destroyStream, missing);
  resolve(handle, "cuStreamQuery", d.queryStream, missing);
  resolve(handle, "cuStreamSynchronize", d.synchronizeStream, missing);
  resolve(handle, "cuEventCreate", d.createEvent, missing);
  resolve(handle, "cuEventDestroy_v2", d.destroyEvent, missing);
  resolve(handle, "cuEventRecord", d.recordEvent, missing);
  resolve(handle, "cuStreamWaitEvent", d.waitEvent, missing);
  if (!missing.empty()) {
    loaded.unusable = fmt::format("the CUDA driver {} cannot be used: {}", name, missing);
    return loaded;
  }
  const CUresult init = d.init(0);
  if (init == CUDA_ERROR_STUB_LIBRARY)
    loaded.unusable = fmt::format(
        "the CUDA driver {} is the toolkit's stub library (CUDA_ERROR_STUB_LIBRARY), not a "
        "driver: install the NVIDIA driver, or point TUTTI_CUDA_DRIVER at its libcuda.so.1",
        name);
  else if (init != CUDA_SUCCESS)
    loaded.unusable = fmt::format("the CUDA driver {} failed to initialise: cuInit: {}", name,
                                  describeWith(d, init));
  return loaded;
}

const Loaded& loaded() {
  static const Loaded once = [] {
    Loaded result = load();
    if (result.unusable.empty())
      log::info("gpu: CUDA driver {} loaded", config::getString("TUTTI_CUDA_DRIVER"));
    else
      log::info("gpu: every buffer is host memory: {}", result.unusable);
    return result;
  }();
  return once;
}

}  // namespace

bool driverReady() {
  return loaded().unusable.empty();
}

void requireDriver() {
  if (!driverReady()) raise(ErrorCode::kSystem, "no GPU path: {}", loaded().unusable);
}

const Driver& driver() {
  requireDriver();
  return loaded().driver;
}

std::string describe(CUresult result) {
  return describeWith(loaded().driver, result);
}

void check(CUresult result, const char* what) {
  if (result != CUDA_SUCCESS) raise(ErrorCode::kSystem, "{} failed: {}", what, describe(result));
}

ContextScope::ContextScope(CUcontext context) {
  check(driver().pushContext(context), "cuCtxPushCurrent");
}

ContextScope::~ContextScope() {
  CUcontext popped = nullptr;
  driver().popContext(&popped);
}

}  // namespace tutti::runtime::gpu
