// A CPU stand-in for the CUDA driver, for tests on machines without a GPU (as CPU threads stand in
// for thread blocks in the device protocol tests): loaded by libtutti through TUTTI_CUDA_DRIVER, it
// implements the entry points tutti resolves, plus what a test needs to make device memory and
// streams (cuMemAlloc_v2, cuStreamCreate, ...). "Device memory" is a PROT_NONE mapping whose
// bytes live in a second, writable mapping of the same memfd that only this driver uses: a host
// access to a device pointer crashes the test, as it would crash on a GPU. A stream is a worker
// thread running its copies, host functions and memory waits in order. Every call that needs a
// current context fails without one (CUDA_ERROR_INVALID_CONTEXT), as the driver does.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace {

using CUresult = int;
using CUdeviceptr = unsigned long long;
using CUdevice = int;
struct CUctx_st;
struct CUstream_st;
using CUcontext = CUctx_st*;
using CUstream = CUstream_st*;
using HostFn = void (*)(void*);

constexpr CUresult kSuccess = 0, kInvalidValue = 1, kInvalidContext = 201, kInvalidHandle = 400;
constexpr int kAttrContext = 1, kAttrMemoryType = 2, kAttrIsManaged = 8, kAttrDeviceOrdinal = 9;
constexpr unsigned kMemoryHost = 1, kMemoryDevice = 2;

struct Allocation {
  char* device;
  char* backing;
  size_t bytes;
  int ordinal;
};

struct Stream {
  int ordinal = 0;
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<std::function<void()>> work;
  size_t pending = 0;
  bool stopping = false;
  std::thread worker;

  void run() {
    std::unique_lock lock(mutex);
    for (;;) {
      cv.wait(lock, [this] { return stopping || !work.empty(); });
      if (work.empty()) return;
      std::function<void()> next = std::move(work.front());
      work.pop_front();
      lock.unlock();
      next();
      lock.lock();
      --pending;
      cv.notify_all();
    }
  }
  void enqueue(std::function<void()> step) {
    {
      std::lock_guard lock(mutex);
      work.push_back(std::move(step));
      ++pending;
    }
    cv.notify_all();
  }
  void synchronize() {
    std::unique_lock lock(mutex);
    cv.wait(lock, [this] { return pending == 0; });
  }
};

std::mutex mutex;
std::map<uintptr_t, Allocation> allocations;  // by device address
std::set<void*> hostAllocations;
std::set<Stream*> streams;
std::atomic<int> allocationDevice{0};
thread_local std::vector<CUcontext> contextStack;

CUcontext contextOf(int ordinal) {
  return reinterpret_cast<CUcontext>(uintptr_t{0x1000} + static_cast<uintptr_t>(ordinal));
}

int ordinalOf(CUcontext context) {
  return static_cast<int>(reinterpret_cast<uintptr_t>(context) - 0x1000);
}

const Allocation* find(uintptr_t address) {
  auto it = allocations.upper_bound(address);
  if (it == allocations.begin()) return nullptr;
  --it;
  return address < it->first + it->second.bytes ? &it->second : nullptr;
}

// The writable twin of [device, device + bytes), or nullptr when that is not device memory.
char* backing(CUdeviceptr device, size_t bytes) {
  std::lock_guard lock(mutex);
  const Allocation* a = find(static_cast<uintptr_t>(device));
  if (!a ||
      static_cast<uintptr_t>(device) + bytes > reinterpret_cast<uintptr_t>(a->device) + a->bytes)
    return nullptr;
  return a->backing + (static_cast<uintptr_t>(device) - reinterpret_cast<uintptr_t>(a->device));
}

Stream* streamOf(CUstream handle) {
  std::lock_guard lock(mutex);
  auto* stream = reinterpret_cast<Stream*>(handle);
  return streams.count(stream) ? stream : nullptr;
}

}  // namespace

extern "C" {

CUresult cuInit(unsigned) {
  return kSuccess;
}

CUresult cuGetErrorString(CUresult, const char** text) {
  *text = "error of the host stand-in driver";
  return kSuccess;
}

CUresult cuDriverGetVersion(int* version) {
  *version = 13000;
  return kSuccess;
}

CUresult cuDeviceGetAttribute(int* value, int, CUdevice) {
  *value = 1;
  return kSuccess;
}

CUresult cuCtxPushCurrent_v2(CUcontext context) {
  contextStack.push_back(context);
  return kSuccess;
}

CUresult cuCtxPopCurrent_v2(CUcontext* context) {
  if (contextStack.empty()) return kInvalidContext;
  if (context) *context = contextStack.back();
  contextStack.pop_back();
  return kSuccess;
}

CUresult cuCtxGetDevice(CUdevice* device) {
  if (contextStack.empty()) return kInvalidContext;
  *device = ordinalOf(contextStack.back());
  return kSuccess;
}

// Test hook: the device that later cuMemAlloc_v2 and cuStreamCreate calls use.
void hostCudaSetDevice(int ordinal) {
  allocationDevice = ordinal;
}

CUresult cuMemAlloc_v2(CUdeviceptr* device, size_t bytes) {
  const size_t size = (std::max<size_t>(bytes, 1) + 4095) / 4096 * 4096;
  const int fd = memfd_create("host-cuda-device", 0);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0) return kInvalidValue;
  void* inaccessible = mmap(nullptr, size, PROT_NONE, MAP_SHARED, fd, 0);
  void* writable = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (inaccessible == MAP_FAILED || writable == MAP_FAILED) return kInvalidValue;
  std::lock_guard lock(mutex);
  allocations[reinterpret_cast<uintptr_t>(inaccessible)] = {
      static_cast<char*>(inaccessible), static_cast<char*>(writable), size, allocationDevice};
  *device = reinterpret_cast<CUdeviceptr>(inaccessible);
  return kSuccess;
}

CUresult cuMemFree_v2(CUdeviceptr device) {
  std::lock_guard lock(mutex);
  auto it = allocations.find(static_cast<uintptr_t>(device));
  if (it == allocations.end()) return kInvalidValue;
  munmap(it->second.device, it->second.bytes);
  munmap(it->second.backing, it->second.bytes);
  allocations.erase(it);
  return kSuccess;
}

CUresult cuPointerGetAttributes(unsigned count, const int* attributes, void** data,
                                CUdeviceptr pointer) {
  std::lock_guard lock(mutex);
  const Allocation* a = find(static_cast<uintptr_t>(pointer));
  const bool pinned = hostAllocations.count(reinterpret_cast<void*>(pointer)) > 0;
  for (unsigned i = 0; i < count; ++i) switch (attributes[i]) {
      case kAttrContext:
        *static_cast<CUcontext*>(data[i]) = a ? contextOf(a->ordinal) : nullptr;
        break;
      case kAttrMemoryType:
        *static_cast<unsigned*>(data[i]) = a ? kMemoryDevice : pinned ? kMemoryHost : 0;
        break;
      case kAttrIsManaged: *static_cast<unsigned*>(data[i]) = 0; break;
      case kAttrDeviceOrdinal: *static_cast<int*>(data[i]) = a ? a->ordinal : -2; break;
      default: return kInvalidValue;
    }
  return kSuccess;
}

CUresult cuMemHostAlloc(void** host, size_t bytes, unsigned) {
  if (contextStack.empty()) return kInvalidContext;
  *host = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  std::lock_guard lock(mutex);
  hostAllocations.insert(*host);
  return kSuccess;
}

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* device, void* host, unsigned) {
  if (contextStack.empty()) return kInvalidContext;
  *device = reinterpret_cast<CUdeviceptr>(host);
  return kSuccess;
}

CUresult cuMemFreeHost(void* host) {
  {
    std::lock_guard lock(mutex);
    hostAllocations.erase(host);
  }
  std::free(host);
  return kSuccess;
}

CUresult cuMemcpyDtoH_v2_ptds(void* host, CUdeviceptr device, size_t bytes) {
  char* from = backing(device, bytes);
  if (contextStack.empty()) return kInvalidContext;
  if (!from) return kInvalidValue;
  std::memcpy(host, from, bytes);
  return kSuccess;
}

CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr device, const void* host, size_t bytes) {
  char* to = backing(device, bytes);
  if (contextStack.empty()) return kInvalidContext;
  if (!to) return kInvalidValue;
  std::memcpy(to, host, bytes);
  return kSuccess;
}

// Test helpers: synchronous copies with no context (the test's own), by the names cuda.h uses.
CUresult cuMemcpyDtoH_v2(void* host, CUdeviceptr device, size_t bytes) {
  char* from = backing(device, bytes);
  if (!from) return kInvalidValue;
  std::memcpy(host, from, bytes);
  return kSuccess;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr device, const void* host, size_t bytes) {
  char* to = backing(device, bytes);
  if (!to) return kInvalidValue;
  std::memcpy(to, host, bytes);
  return kSuccess;
}

CUresult cuStreamCreate(CUstream* handle, unsigned) {
  auto* stream = new Stream;
  stream->ordinal = allocationDevice;
  stream->worker = std::thread([stream] { stream->run(); });
  std::lock_guard lock(mutex);
  streams.insert(stream);
  *handle = reinterpret_cast<CUstream>(stream);
  return kSuccess;
}

CUresult cuStreamDestroy_v2(CUstream handle) {
  Stream* stream = streamOf(handle);
  if (!stream) return kInvalidHandle;
  {
    std::lock_guard lock(mutex);
    streams.erase(stream);
  }
  {
    std::lock_guard lock(stream->mutex);
    stream->stopping = true;
  }
  stream->cv.notify_all();
  stream->worker.join();
  delete stream;
  return kSuccess;
}

CUresult cuStreamSynchronize(CUstream handle) {
  Stream* stream = streamOf(handle);
  if (!stream) return kInvalidHandle;
  stream->synchronize();
  return kSuccess;
}

CUresult cuStreamGetCtx(CUstream handle, CUcontext* context) {
  Stream* stream = streamOf(handle);
  if (!stream) return kInvalidHandle;
  *context = contextOf(stream->ordinal);
  return kSuccess;
}

CUresult cuMemcpyDtoHAsync_v2(void* host, CUdeviceptr device, size_t bytes, CUstream handle) {
  Stream* stream = streamOf(handle);
  if (!stream || contextStack.empty()) return stream ? kInvalidContext : kInvalidHandle;
  if (!backing(device, bytes)) return kInvalidValue;
  stream->enqueue([=] { std::memcpy(host, backing(device, bytes), bytes); });
  return kSuccess;
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr device, const void* host, size_t bytes, CUstream handle) {
  Stream* stream = streamOf(handle);
  if (!stream || contextStack.empty()) return stream ? kInvalidContext : kInvalidHandle;
  if (!backing(device, bytes)) return kInvalidValue;
  stream->enqueue([=] { std::memcpy(backing(device, bytes), host, bytes); });
  return kSuccess;
}

CUresult cuLaunchHostFunc(CUstream handle, HostFn function, void* data) {
  Stream* stream = streamOf(handle);
  if (!stream) return kInvalidHandle;
  stream->enqueue([=] { function(data); });
  return kSuccess;
}

// Only the default flag (cyclic >=), which is all tutti uses.
CUresult cuStreamWaitValue32_v2(CUstream handle, CUdeviceptr address, uint32_t value,
                                unsigned flags) {
  Stream* stream = streamOf(handle);
  if (!stream || contextStack.empty()) return stream ? kInvalidContext : kInvalidHandle;
  if (flags != 0) return kInvalidValue;
  stream->enqueue([=] {
    std::atomic_ref<uint32_t> word(*reinterpret_cast<uint32_t*>(address));
    while (static_cast<int32_t>(word.load(std::memory_order_acquire) - value) < 0)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  });
  return kSuccess;
}

}  // extern "C"
