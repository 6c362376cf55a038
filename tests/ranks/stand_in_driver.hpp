// The CPU stand-in for the CUDA driver (host_cuda_driver.cpp) as the GPU tests of tests/ranks use
// it: the entry points a test calls itself (the same library libtutti loaded through
// TUTTI_CUDA_DRIVER), stand-in device memory and streams, and the communicator's async error.
#pragma once

#include <cuda.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "collective_check.hpp"
#include "tutti/tutti.h"
#include "world.hpp"

namespace tutti::testing {

using DevicePtr = CUdeviceptr;

// The stand-in driver's entry points the test itself uses (the same library libtutti loaded), with
// cuda.h's types (UBSan's -fsanitize=function checks calls through these pointers).
struct Driver {
  void* handle = dlopen(std::getenv("TUTTI_CUDA_DRIVER"), RTLD_NOW | RTLD_LOCAL);
  template <typename F>
  F get(const char* name) const {
    void* symbol = handle ? dlsym(handle, name) : nullptr;
    if (!symbol) throw std::runtime_error(std::string("stand-in driver lacks ") + name);
    return reinterpret_cast<F>(symbol);
  }
  decltype(&::cuMemAlloc_v2) alloc = get<decltype(alloc)>("cuMemAlloc_v2");
  decltype(&::cuMemFree_v2) free = get<decltype(free)>("cuMemFree_v2");
  decltype(&::cuMemcpyHtoD_v2) toDevice = get<decltype(toDevice)>("cuMemcpyHtoD_v2");
  decltype(&::cuMemcpyDtoH_v2) toHost = get<decltype(toHost)>("cuMemcpyDtoH_v2");
  decltype(&::cuStreamCreate) createStream = get<decltype(createStream)>("cuStreamCreate");
  decltype(&::cuStreamDestroy_v2) destroyStream =
      get<decltype(destroyStream)>("cuStreamDestroy_v2");
  decltype(&::cuStreamSynchronize) synchronize = get<decltype(synchronize)>("cuStreamSynchronize");
  decltype(&::cuStreamWaitValue32_v2) waitValue =
      get<decltype(waitValue)>("cuStreamWaitValue32_v2");
  decltype(&::cuCtxPushCurrent_v2) pushContext = get<decltype(pushContext)>("cuCtxPushCurrent_v2");
  decltype(&::cuCtxPopCurrent_v2) popContext = get<decltype(popContext)>("cuCtxPopCurrent_v2");
  decltype(&::cuMemHostAlloc) hostAlloc = get<decltype(hostAlloc)>("cuMemHostAlloc");
  decltype(&::cuMemFreeHost) freeHost = get<decltype(freeHost)>("cuMemFreeHost");
  void (*setDevice)(int) = get<void (*)(int)>("hostCudaSetDevice");
  long (*kernelsLaunched)() = get<long (*)()>("hostCudaKernelsLaunched");
  long (*treeKernelsLaunched)() = get<long (*)()>("hostCudaTreeKernelsLaunched");
  long (*treeKernelsInteriorTwice)() = get<long (*)()>("hostCudaTreeKernelsInteriorTwice");
  // Launches of the kernel of this name fail from now on (CUDA_ERROR_LAUNCH_FAILED); "" none.
  void (*failLaunchesOf)(const char*) = get<void (*)(const char*)>("hostCudaFailLaunchesOf");
};

// The stand-in's context of device 0.
inline CUcontext deviceZero() {
  return reinterpret_cast<CUcontext>(uintptr_t{0x1000});
}

inline const Driver& driver() {
  static const Driver d;
  return d;
}

inline void* deviceAlloc(size_t bytes) {
  DevicePtr p = 0;
  if (driver().alloc(&p, bytes) != 0) throw std::runtime_error("cuMemAlloc failed");
  return reinterpret_cast<void*>(p);
}

// Stand-in GPU `device` is this thread's device while it lives (device 0 after: the default).
class CurrentDevice {
 public:
  explicit CurrentDevice(int device) { driver().setDevice(device); }
  ~CurrentDevice() { driver().setDevice(0); }
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;
};

// Runs body(rank) on one thread per rank with stand-in GPU `rank` as the thread's device (its
// memory and streams are that GPU's): ranks of one process sharing a GPU are staged, not run as
// kernels (runtime/gpu/gpu_sharing.hpp), so these tests give every rank a GPU of its own (meson
// gives the stand-in eight).
template <typename Result>
std::vector<Result> onEveryRankOwnGpu(int nranks, const std::function<Result(int)>& body) {
  return onEveryRank<Result>(nranks, [&](int rank) {
    const CurrentDevice itsGpu(rank);
    return body(rank);
  });
}

class Stream {
 public:
  Stream() { driver().createStream(&stream_, 0); }
  ~Stream() {
    if (stream_) driver().destroyStream(stream_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  tuttiStream_t get() const { return stream_; }
  void synchronize() const { driver().synchronize(stream_); }
  // Holds back later work on the stream until `word` becomes 1 (which the test sets later).
  void holdBack(const uint32_t& word) const {
    CUcontext context = nullptr;
    if (driver().pushContext(deviceZero()) != 0 ||
        driver().waitValue(stream_, reinterpret_cast<DevicePtr>(&word), 1, 0) != 0)
      throw std::runtime_error("cuStreamWaitValue32 failed");
    driver().popContext(&context);
  }
  void destroy() {
    driver().destroyStream(stream_);
    stream_ = nullptr;
  }

 private:
  tuttiStream_t stream_ = nullptr;
};

class DeviceMemory : public CaseMemory {
 public:
  explicit DeviceMemory(bool onStream) : stream_(onStream ? std::make_unique<Stream>() : nullptr) {}
  void* allocate(size_t bytes) override { return deviceAlloc(bytes); }
  void release(void* data) override { driver().free(reinterpret_cast<DevicePtr>(data)); }
  void upload(void* to, const void* from, size_t bytes) override {
    driver().toDevice(reinterpret_cast<DevicePtr>(to), from, bytes);
  }
  void download(void* to, const void* from, size_t bytes) override {
    driver().toHost(to, reinterpret_cast<DevicePtr>(from), bytes);
  }
  tuttiStream_t stream() override { return stream_ ? stream_->get() : nullptr; }
  void synchronize() override {
    if (stream_) stream_->synchronize();
  }

 private:
  std::unique_ptr<Stream> stream_;
};

struct DeviceBuffer {
  explicit DeviceBuffer(size_t bytes) : data(deviceAlloc(bytes)) {}
  ~DeviceBuffer() { driver().free(reinterpret_cast<DevicePtr>(data)); }
  DeviceBuffer(const DeviceBuffer&) = delete;  // one owner frees it
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* data;
};

// The communicator's asynchronous error.
inline tuttiResult_t asyncError(tuttiComm_t comm) {
  tuttiResult_t error = tuttiSuccess;
  tutti_comm_get_async_error(comm, &error);
  return error;
}

}  // namespace tutti::testing
