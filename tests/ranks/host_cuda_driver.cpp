// A CPU stand-in for the CUDA driver, for tests on machines without a GPU (as CPU threads stand in
// for thread blocks in the device protocol tests): loaded by libtutti through TUTTI_CUDA_DRIVER, it
// implements the entry points tutti resolves, plus what a test needs to make device memory and
// streams (cuMemAlloc_v2, cuStreamCreate, ...). "Device memory" is a PROT_NONE mapping whose
// bytes live in a second, writable mapping of the same memfd that only this driver uses: a host
// access to a device pointer crashes the test, as it would crash on a GPU. A stream is a worker
// thread running its copies, host functions, memory waits and kernels in order. A kernel of the
// device collectives (found by name in the "module", whatever image is loaded) runs the very
// schedules of kernels/device/launch.hpp with one CPU thread per block (HostGroup), on the
// writable twins of the device pointers it is given. Every call that needs a
// current context fails without one (CUDA_ERROR_INVALID_CONTEXT), as the driver does. The
// signatures are cuda.h's, so that calls through libtutti's pointers have the exact types (UBSan's
// -fsanitize=function checks them).
#include <cuda.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kernels/device/group.hpp"
#include "kernels/device/launch.hpp"

namespace {

namespace device = tutti::kernels::device;

// As the driver: a copy of 0 bytes is valid with any pointers (memcpy's are declared non-null).
void copyBytes(void* to, const void* from, size_t bytes) {
  if (bytes > 0) std::memcpy(to, from, bytes);
}

constexpr unsigned kMemoryHost = CU_MEMORYTYPE_HOST, kMemoryDevice = CU_MEMORYTYPE_DEVICE;

struct Allocation {
  char* device;
  char* backing;
  size_t bytes;
  int ordinal;
  bool mapped = false;  // by cuMemMap (the virtual memory API), not cuMemAlloc
};

// An allocation of the virtual memory API: a memfd whose name carries the device, so that an
// importing process knows it too.
struct PhysicalMemory {
  int fd;
  size_t bytes;
  int ordinal;
};
constexpr size_t kGranularity = size_t{2} << 20;  // the driver's, for device memory
constexpr const char* kPhysicalName = "host-cuda-physical-";

struct Stream {
  int ordinal = 0;
  // A blocking stream (created without CU_STREAM_NON_BLOCKING): its work waits for the default
  // stream's work enqueued before it, as the driver orders it after the legacy default stream.
  Stream* after = nullptr;
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<std::function<void()>> work;
  uint64_t enqueued = 0, finished = 0;  // steps ever; the stream is idle when they agree
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
      ++finished;
      cv.notify_all();
    }
  }
  void push(std::function<void()> step) {
    {
      std::lock_guard lock(mutex);
      work.push_back(std::move(step));
      ++enqueued;
    }
    cv.notify_all();
  }
  void enqueue(std::function<void()> step) {
    if (after) {
      const uint64_t mark = after->enqueuedSoFar();
      push([before = after, mark] { before->waitFinished(mark); });
    }
    push(std::move(step));
  }
  void stop() {
    {
      std::lock_guard lock(mutex);
      stopping = true;
    }
    cv.notify_all();
  }
  uint64_t enqueuedSoFar() {
    std::lock_guard lock(mutex);
    return enqueued;
  }
  void waitFinished(uint64_t mark) {
    std::unique_lock lock(mutex);
    cv.wait(lock, [&] { return finished >= mark; });
  }

  void synchronize() {
    std::unique_lock lock(mutex);
    cv.wait(lock, [this] { return finished == enqueued; });
  }
};

std::mutex mutex;
std::map<uintptr_t, Allocation> allocations;  // by device address
std::map<uintptr_t, size_t> hostAllocations;  // pinned: cuMemHostAlloc'd or registered
std::set<Stream*> streams;
thread_local int allocationDevice = 0;  // per thread, as cudaSetDevice's current device
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

// The legacy default stream and every thread's default stream, as one: ordered work the host
// does not wait for (a copy from pageable memory, a copy on the device), as the driver's.
// One per process: a child of fork() inherits the parent's without its worker thread (tests fork
// after using the driver, which the real one does not allow). Never destroyed: its worker may
// wait at exit.
Stream& defaultStream() {
  struct Owned {
    pid_t pid;
    Stream* stream;
  };
  static std::atomic<Owned*> current{nullptr};
  Owned* now = current.load(std::memory_order_acquire);
  const pid_t me = getpid();
  if (now && now->pid == me) return *now->stream;
  auto* made = new Owned{me, new Stream};
  made->stream->worker = std::thread([stream = made->stream] { stream->run(); });
  made->stream->worker.detach();
  if (current.compare_exchange_strong(now, made, std::memory_order_acq_rel)) return *made->stream;
  made->stream->stop();  // another thread made this process's first
  return *now->stream;
}

bool isDefaultStream(CUstream handle) {
  return !handle || handle == CU_STREAM_LEGACY || handle == CU_STREAM_PER_THREAD;
}

Stream* streamOf(CUstream handle) {
  if (isDefaultStream(handle)) return &defaultStream();
  std::lock_guard lock(mutex);
  auto* stream = reinterpret_cast<Stream*>(handle);
  return streams.count(stream) ? stream : nullptr;
}

// A stream memory operation, `step` in stream order: as the driver, it needs a current context;
// only the default flags, which are all tutti uses (cyclic >= for a wait, a memory barrier before
// a write).
CUresult enqueueMemoryOp(CUstream handle, unsigned flags, std::function<void()> step) {
  Stream* stream = streamOf(handle);
  if (!stream || contextStack.empty())
    return stream ? CUDA_ERROR_INVALID_CONTEXT : CUDA_ERROR_INVALID_HANDLE;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  stream->enqueue(std::move(step));
  return CUDA_SUCCESS;
}

// Whether [host, host + bytes) lies in pinned host memory.
bool pinned(const void* host, size_t bytes) {
  const auto address = reinterpret_cast<uintptr_t>(host);
  std::lock_guard lock(mutex);
  auto it = hostAllocations.upper_bound(address);
  if (it == hostAllocations.begin()) return false;
  --it;
  return address + bytes <= it->first + it->second;
}

// The writable twin of a pointer into device memory; any other pointer (pinned host memory, which
// this driver maps at the same address) unchanged.
template <typename P>
P* twin(P* pointer) {
  if (!pointer) return pointer;
  const auto address = reinterpret_cast<uintptr_t>(pointer);
  const Allocation* a = find(address);
  if (!a) return pointer;
  return reinterpret_cast<P*>(a->backing + (address - reinterpret_cast<uintptr_t>(a->device)));
}

void twinFifo(device::Fifo& fifo) {
  fifo.head = twin(fifo.head);
  fifo.tail = twin(fifo.tail);
  fifo.slots = twin(fifo.slots);
}

// The launch as the CPU threads see it: every device pointer replaced by its twin.
device::Launch onHost(device::Launch l) {
  std::lock_guard lock(mutex);
  for (int w = 0; w < l.nworks && w < device::kMaxWorks; ++w) {
    l.works[w].src = twin(l.works[w].src);
    l.works[w].dst = twin(l.works[w].dst);
  }
  for (int ch = 0; ch < l.nchannels && ch < device::kMaxChannels; ++ch) {
    if (l.algorithm == device::Algorithm::kTree) {
      device::TreeLinks& t = l.tree[ch];
      twinFifo(t.toParent);
      twinFifo(t.fromParent);
      for (int i = 0; i < device::kMaxPeers; ++i) {
        twinFifo(t.fromChildren[i]);
        twinFifo(t.toChildren[i]);
      }
    } else {
      twinFifo(l.ring[ch].fromPrev);
      twinFifo(l.ring[ch].toNext);
      l.ring[ch].ranks = twin(l.ring[ch].ranks);
    }
  }
  return l;
}

using HostKernel = device::Status (*)(const device::Launch&, int channel);

template <typename Proto, typename T, typename Op>
device::Status hostReducing(const device::Launch& l, int channel) {
  return device::runWorks(device::HostGroup{}, l, channel, [&](const device::Work& w) {
    return device::runReducing<Proto, T, Op>(device::HostGroup{}, l, w, channel);
  });
}

template <typename Proto>
device::Status hostCopying(const device::Launch& l, int channel) {
  return device::runWorks(device::HostGroup{}, l, channel, [&](const device::Work& w) {
    return device::runCopying<Proto>(device::HostGroup{}, l, w, channel);
  });
}

template <typename T>
device::Status hostDividing(const device::Launch& l, int channel) {
  device::runDivide<T>(device::HostGroup{}, l, channel);
  return device::Status::kOk;
}

#define HOST_REDUCING(proto, Proto, tname, T, oname, Op) \
  {"tutti_reduce_" #proto "_" #tname "_" #oname,         \
   &hostReducing<device::Proto, T, tutti::kernels::Op>},
#define HOST_COPYING(proto, Proto) {"tutti_copy_" #proto, &hostCopying<device::Proto>},
#define HOST_DIVIDING(divide, tname, T) {"tutti_divide_" #tname, &hostDividing<T>},
// The kernels by the names the fatbin gives them (the same lists).
const std::map<std::string, HostKernel> kKernels = {TUTTI_REDUCING_KERNELS(
    HOST_REDUCING) TUTTI_COPYING_KERNELS(HOST_COPYING) TUTTI_DIVIDING_KERNELS(HOST_DIVIDING)};

int moduleToken;  // the one "module": any image loads as the table above
std::atomic<long> kernelsLaunched{0};
std::atomic<long> treeKernelsLaunched{0};  // of them, tree schedules
// Of those, launches whose first two channels both have children: the rank is interior in both
// channels' trees.
std::atomic<long> treeKernelsInteriorTwice{0};
const HostKernel* failingKernel = nullptr;  // launches of it fail (hostCudaFailLaunchesOf)

// One block: the kernel's first thread reports kRunning, then the channel's result, where the
// kernel has statuses (as the kernels of collective_kernel.cu do; avg's division has none).
void runBlock(HostKernel kernel, const device::Launch& l, int channel) {
  if (!l.status) {
    kernel(l, channel);
    return;
  }
  std::atomic_ref<device::Status> status(l.status[channel]);
  status.store(device::kRunning, std::memory_order_release);
  status.store(kernel(l, channel), std::memory_order_release);
}

struct Event {
  std::mutex mutex;
  std::condition_variable cv;
  uint64_t recorded = 0;  // records enqueued
  uint64_t reached = 0;   // records their streams have reached
};

std::map<CUevent, std::shared_ptr<Event>> events;  // created and not destroyed

std::shared_ptr<Event> eventOf(CUevent handle) {
  std::lock_guard lock(mutex);
  const auto it = events.find(handle);
  return it == events.end() ? nullptr : it->second;
}

// What a test sets through the environment, for ranks sharing a GPU: HOST_CUDA_MPS=0 (contexts
// are not MPS clients; by default they are), HOST_CUDA_MULTIPROCESSORS (default 8) and
// HOST_CUDA_BLOCKS_PER_SM (a kernel's occupancy, default kMaxChannels); for ranks on different
// GPUs, HOST_CUDA_PEER_ACCESS=0 (the two devices cannot reach each other's memory, as GPUs behind
// different PCIe root complexes often cannot; by default they can).
int environmentInt(const char* name, int fallback) {
  const char* text = std::getenv(name);
  return text && *text ? std::atoi(text) : fallback;
}

// How long a copy from pageable memory takes to land after the call returned:
// HOST_CUDA_COPY_DELAY_US, default 2000 -- long enough that work not ordered after it reads
// what was there before.
std::chrono::microseconds copyDelay() {
  return std::chrono::microseconds(environmentInt("HOST_CUDA_COPY_DELAY_US", 2000));
}

// A copy the host does not wait for: on the default stream, landing copyDelay() from now.
void landLater(std::function<void()> copy) {
  defaultStream().enqueue([copy = std::move(copy), delay = copyDelay()] {
    std::this_thread::sleep_for(delay);
    copy();
  });
}

// A synchronous copy to the device (`to`: the writable twin): from pinned memory it has landed
// when this returns; from pageable memory the bytes are staged now and land later, as the DMA
// does after the driver's call returned.
void copyToDevice(char* to, const void* host, size_t bytes) {
  if (pinned(host, bytes)) {
    defaultStream().synchronize();
    copyBytes(to, host, bytes);
    return;
  }
  auto staged = std::make_shared<std::vector<char>>(static_cast<const char*>(host),
                                                    static_cast<const char*>(host) + bytes);
  landLater([to, staged] { copyBytes(to, staged->data(), staged->size()); });
}

bool peerAccess(int device, int peer) {
  return device == peer || environmentInt("HOST_CUDA_PEER_ACCESS", 1) != 0;
}

// The devices' PCI bus ids: HOST_CUDA_PCI_BUS_IDS (separated by spaces, at most 16), so that a test
// can place them on the GPUs of a topology file; by default two, 0000:0d:00.0 and 0000:0e:00.0.
// The driver spells the hex digits in upper case, as this one does.
const std::vector<std::string>& busIds() {
  static const std::vector<std::string> ids = [] {
    std::vector<std::string> given;
    const char* text = std::getenv("HOST_CUDA_PCI_BUS_IDS");
    std::istringstream words(text ? text : "");
    for (std::string id; words >> id && given.size() < 16;) {
      for (char& c : id) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      given.push_back(id);
    }
    return given.empty() ? std::vector<std::string>{"0000:0D:00.0", "0000:0E:00.0"} : given;
  }();
  return ids;
}

bool isDevice(int ordinal) {
  return ordinal >= 0 && ordinal < static_cast<int>(busIds().size());
}

}  // namespace

extern "C" {

CUresult cuInit(unsigned) {
  return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult, const char** text) {
  *text = "error of the host stand-in driver";
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int* version) {
  *version = 13000;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice) {
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_MPS_ENABLED: *value = environmentInt("HOST_CUDA_MPS", 1); break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *value = environmentInt("HOST_CUDA_MULTIPROCESSORS", 8);
      break;
    default: *value = 1;
  }
  return CUDA_SUCCESS;
}

// Device d's UUID: the same in every process, as a GPU's is; HOST_CUDA_UUID_SALT (default 0) is
// added to its last byte, so that "hosts" sharing this machine's boot id (network namespaces)
// can have GPUs of their own.
CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice device) {
  if (!isDevice(device)) return CUDA_ERROR_INVALID_DEVICE;
  for (int i = 0; i < 16; ++i) uuid->bytes[i] = static_cast<char>(0x10 * device + i);
  uuid->bytes[15] = static_cast<char>(uuid->bytes[15] + environmentInt("HOST_CUDA_UUID_SALT", 0));
  return CUDA_SUCCESS;
}

// Two devices by default, so that tests can mix them.
CUresult cuDeviceGetCount(int* count) {
  *count = static_cast<int>(busIds().size());
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char* text, int length, CUdevice device) {
  if (!isDevice(device) || length < 1) return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(text, static_cast<size_t>(length), "%s", busIds()[size_t(device)].c_str());
  return CUDA_SUCCESS;
}

CUresult cuDeviceCanAccessPeer(int* can, CUdevice device, CUdevice peer) {
  if (!isDevice(device) || !isDevice(peer)) return CUDA_ERROR_INVALID_DEVICE;
  *can = peerAccess(device, peer) ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (!isDevice(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device) {
  *context = contextOf(device);
  return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(CUcontext context) {
  if (!context) return CUDA_ERROR_INVALID_CONTEXT;
  contextStack.push_back(context);
  return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(CUcontext* context) {
  if (contextStack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (context) *context = contextStack.back();
  contextStack.pop_back();
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext* context) {
  *context = contextStack.empty() ? nullptr : contextStack.back();
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice* device) {
  if (contextStack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  *device = ordinalOf(contextStack.back());
  return CUDA_SUCCESS;
}

// Test hook: the device that this thread's later cuMemAlloc_v2 (without a current context) and
// cuStreamCreate calls use.
void hostCudaSetDevice(int ordinal) {
  allocationDevice = ordinal;
}

CUresult cuMemAlloc_v2(CUdeviceptr* device, size_t bytes) {
  const size_t size = (std::max<size_t>(bytes, 1) + 4095) / 4096 * 4096;
  const int fd = memfd_create("host-cuda-device", 0);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0) return CUDA_ERROR_INVALID_VALUE;
  void* inaccessible = mmap(nullptr, size, PROT_NONE, MAP_SHARED, fd, 0);
  void* writable = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (inaccessible == MAP_FAILED || writable == MAP_FAILED) return CUDA_ERROR_INVALID_VALUE;
  const int ordinal = contextStack.empty() ? allocationDevice : ordinalOf(contextStack.back());
  std::lock_guard lock(mutex);
  allocations[reinterpret_cast<uintptr_t>(inaccessible)] = {
      static_cast<char*>(inaccessible), static_cast<char*>(writable), size, ordinal};
  *device = reinterpret_cast<CUdeviceptr>(inaccessible);
  return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr device) {
  std::lock_guard lock(mutex);
  auto it = allocations.find(static_cast<uintptr_t>(device));
  if (it == allocations.end() || it->second.mapped) return CUDA_ERROR_INVALID_VALUE;
  munmap(it->second.device, it->second.bytes);
  munmap(it->second.backing, it->second.bytes);
  allocations.erase(it);
  return CUDA_SUCCESS;
}

CUresult cuPointerGetAttributes(unsigned count, CUpointer_attribute* attributes, void** data,
                                CUdeviceptr pointer) {
  std::lock_guard lock(mutex);
  const Allocation* a = find(static_cast<uintptr_t>(pointer));
  const bool pinned = hostAllocations.count(static_cast<uintptr_t>(pointer)) > 0;
  for (unsigned i = 0; i < count; ++i) switch (attributes[i]) {
      case CU_POINTER_ATTRIBUTE_CONTEXT:  // none for the virtual memory API's mappings
        *static_cast<CUcontext*>(data[i]) = a && !a->mapped ? contextOf(a->ordinal) : nullptr;
        break;
      case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *static_cast<unsigned*>(data[i]) = a ? kMemoryDevice : pinned ? kMemoryHost : 0;
        break;
      case CU_POINTER_ATTRIBUTE_IS_MANAGED: *static_cast<unsigned*>(data[i]) = 0; break;
      case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *static_cast<int*>(data[i]) = a ? a->ordinal : -2;
        break;
      default: return CUDA_ERROR_INVALID_VALUE;
    }
  return CUDA_SUCCESS;
}

CUresult cuMemHostAlloc(void** host, size_t bytes, unsigned) {
  if (contextStack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  *host = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  std::lock_guard lock(mutex);
  hostAllocations.emplace(reinterpret_cast<uintptr_t>(*host), bytes);
  return CUDA_SUCCESS;
}

// Registered memory is pinned host memory the GPUs reach at the same address, as allocated.
CUresult cuMemHostRegister_v2(void* host, size_t bytes, unsigned) {
  if (contextStack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (!host || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mutex);
  if (!hostAllocations.emplace(reinterpret_cast<uintptr_t>(host), bytes).second)
    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  return CUDA_SUCCESS;
}

CUresult cuMemHostUnregister(void* host) {
  std::lock_guard lock(mutex);
  return hostAllocations.erase(reinterpret_cast<uintptr_t>(host))
             ? CUDA_SUCCESS
             : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* device, void* host, unsigned) {
  if (contextStack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  *device = reinterpret_cast<CUdeviceptr>(host);
  return CUDA_SUCCESS;
}

CUresult cuMemFreeHost(void* host) {
  {
    std::lock_guard lock(mutex);
    hostAllocations.erase(reinterpret_cast<uintptr_t>(host));
  }
  std::free(host);
  return CUDA_SUCCESS;
}

// The synchronous copies, on the calling thread's default stream, with the driver's documented
// host synchronisation: to the host, the call returns once the copy has landed (after the
// stream's earlier work); from pinned memory too; from pageable memory, once the bytes are
// staged, and they land later (copyDelay); on the device, at once, the copy landing later.
CUresult cuMemcpyDtoH_v2_ptds(void* host, CUdeviceptr device, size_t bytes) {
  char* from = backing(device, bytes);
  if (contextStack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (!from) return CUDA_ERROR_INVALID_VALUE;
  defaultStream().synchronize();
  copyBytes(host, from, bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr device, const void* host, size_t bytes) {
  char* to = backing(device, bytes);
  if (contextStack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (!to) return CUDA_ERROR_INVALID_VALUE;
  copyToDevice(to, host, bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr to, CUdeviceptr from, size_t bytes) {
  char* target = backing(to, bytes);
  const char* source = backing(from, bytes);
  if (contextStack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (!target || !source) return CUDA_ERROR_INVALID_VALUE;
  landLater([target, source, bytes] { std::memmove(target, source, bytes); });
  return CUDA_SUCCESS;
}

// Test helpers: the same copies with no context (the test's own), by the names cuda.h uses.
CUresult cuMemcpyDtoH_v2(void* host, CUdeviceptr device, size_t bytes) {
  char* from = backing(device, bytes);
  if (!from) return CUDA_ERROR_INVALID_VALUE;
  defaultStream().synchronize();
  copyBytes(host, from, bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr device, const void* host, size_t bytes) {
  char* to = backing(device, bytes);
  if (!to) return CUDA_ERROR_INVALID_VALUE;
  copyToDevice(to, host, bytes);
  return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream* handle, unsigned flags) {
  auto* stream = new Stream;
  if (!(flags & CU_STREAM_NON_BLOCKING)) stream->after = &defaultStream();
  stream->ordinal = contextStack.empty() ? allocationDevice : ordinalOf(contextStack.back());
  stream->worker = std::thread([stream] { stream->run(); });
  std::lock_guard lock(mutex);
  streams.insert(stream);
  *handle = reinterpret_cast<CUstream>(stream);
  return CUDA_SUCCESS;
}

CUresult cuStreamDestroy_v2(CUstream handle) {
  Stream* stream = streamOf(handle);
  if (!stream || isDefaultStream(handle)) return CUDA_ERROR_INVALID_HANDLE;
  {
    std::lock_guard lock(mutex);
    streams.erase(stream);
  }
  stream->stop();
  stream->worker.join();
  delete stream;
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream handle) {
  Stream* stream = streamOf(handle);
  if (!stream) return CUDA_ERROR_INVALID_HANDLE;
  stream->synchronize();
  return CUDA_SUCCESS;
}

CUresult cuStreamGetCtx(CUstream handle, CUcontext* context) {
  Stream* stream = streamOf(handle);
  if (!stream) return CUDA_ERROR_INVALID_HANDLE;
  *context = contextOf(stream->ordinal);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoHAsync_v2(void* host, CUdeviceptr device, size_t bytes, CUstream handle) {
  Stream* stream = streamOf(handle);
  if (!stream || contextStack.empty())
    return stream ? CUDA_ERROR_INVALID_CONTEXT : CUDA_ERROR_INVALID_HANDLE;
  if (!backing(device, bytes)) return CUDA_ERROR_INVALID_VALUE;
  stream->enqueue([=] { copyBytes(host, backing(device, bytes), bytes); });
  return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr device, const void* host, size_t bytes, CUstream handle) {
  Stream* stream = streamOf(handle);
  if (!stream || contextStack.empty())
    return stream ? CUDA_ERROR_INVALID_CONTEXT : CUDA_ERROR_INVALID_HANDLE;
  if (!backing(device, bytes)) return CUDA_ERROR_INVALID_VALUE;
  stream->enqueue([=] { copyBytes(backing(device, bytes), host, bytes); });
  return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr to, CUdeviceptr from, size_t bytes, CUstream handle) {
  Stream* stream = streamOf(handle);
  if (!stream || contextStack.empty())
    return stream ? CUDA_ERROR_INVALID_CONTEXT : CUDA_ERROR_INVALID_HANDLE;
  if (!backing(to, bytes) || !backing(from, bytes)) return CUDA_ERROR_INVALID_VALUE;
  stream->enqueue([=] { std::memmove(backing(to, bytes), backing(from, bytes), bytes); });
  return CUDA_SUCCESS;
}

CUresult cuLaunchHostFunc(CUstream handle, CUhostFn function, void* data) {
  Stream* stream = streamOf(handle);
  if (!stream) return CUDA_ERROR_INVALID_HANDLE;
  stream->enqueue([=] { function(data); });
  return CUDA_SUCCESS;
}

CUresult cuStreamWaitValue32_v2(CUstream handle, CUdeviceptr address, cuuint32_t value,
                                unsigned flags) {
  return enqueueMemoryOp(handle, flags, [=] {
    std::atomic_ref<uint32_t> word(*reinterpret_cast<uint32_t*>(address));
    while (static_cast<int32_t>(word.load(std::memory_order_acquire) - value) < 0)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  });
}

CUresult cuStreamWriteValue32_v2(CUstream handle, CUdeviceptr address, cuuint32_t value,
                                 unsigned flags) {
  return enqueueMemoryOp(handle, flags, [=] {
    std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(address))
        .store(value, std::memory_order_release);
  });
}

CUresult cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp*,
                                       CUmemAllocationGranularity_flags) {
  *granularity = kGranularity;
  return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t bytes,
                     const CUmemAllocationProp* prop, unsigned long long) {
  if (bytes == 0 || bytes % kGranularity != 0 || !isDevice(prop->location.id))
    return CUDA_ERROR_INVALID_VALUE;
  const std::string name = kPhysicalName + std::to_string(prop->location.id);
  const int fd = memfd_create(name.c_str(), MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
  *handle = reinterpret_cast<uintptr_t>(new PhysicalMemory{fd, bytes, prop->location.id});
  return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  auto* memory = reinterpret_cast<PhysicalMemory*>(handle);
  close(memory->fd);  // mappings keep the memory, as the driver's do
  delete memory;
  return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr* address, size_t bytes, size_t, CUdeviceptr,
                             unsigned long long) {
  void* range = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (range == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  *address = reinterpret_cast<CUdeviceptr>(range);
  return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr address, size_t bytes) {
  return munmap(reinterpret_cast<void*>(address), bytes) == 0 ? CUDA_SUCCESS
                                                              : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemMap(CUdeviceptr address, size_t bytes, size_t offset,
                  CUmemGenericAllocationHandle handle, unsigned long long) {
  auto* memory = reinterpret_cast<PhysicalMemory*>(handle);
  if (offset + bytes > memory->bytes) return CUDA_ERROR_INVALID_VALUE;
  void* at = reinterpret_cast<void*>(address);
  // The device's view replaces the reserved range, inaccessible to the host; the twin is ours.
  if (mmap(at, bytes, PROT_NONE, MAP_SHARED | MAP_FIXED, memory->fd, static_cast<off_t>(offset)) ==
      MAP_FAILED)
    return CUDA_ERROR_INVALID_VALUE;
  void* writable = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memory->fd,
                        static_cast<off_t>(offset));
  if (writable == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  std::lock_guard lock(mutex);
  allocations[static_cast<uintptr_t>(address)] = {
      static_cast<char*>(at), static_cast<char*>(writable), bytes, memory->ordinal, true};
  return CUDA_SUCCESS;
}

CUresult cuMemUnmap(CUdeviceptr address, size_t bytes) {
  std::lock_guard lock(mutex);
  auto it = allocations.find(static_cast<uintptr_t>(address));
  if (it == allocations.end() || !it->second.mapped || it->second.bytes != bytes)
    return CUDA_ERROR_INVALID_VALUE;
  munmap(it->second.backing, bytes);
  // Back to a reserved range.
  mmap(it->second.device, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  allocations.erase(it);
  return CUDA_SUCCESS;
}

CUresult cuMemSetAccess(CUdeviceptr address, size_t bytes, const CUmemAccessDesc* access,
                        size_t count) {
  std::lock_guard lock(mutex);
  const Allocation* a = find(static_cast<uintptr_t>(address));
  if (!a || !a->mapped || count == 0 || !isDevice(access->location.id) ||
      static_cast<uintptr_t>(address) + bytes > reinterpret_cast<uintptr_t>(a->device) + a->bytes)
    return CUDA_ERROR_INVALID_VALUE;
  // Another GPU's memory is reachable only where the two have peer access.
  if (!peerAccess(access->location.id, a->ordinal)) return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
  return CUDA_SUCCESS;
}

CUresult cuMemExportToShareableHandle(void* shareable, CUmemGenericAllocationHandle handle,
                                      CUmemAllocationHandleType type, unsigned long long) {
  if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return CUDA_ERROR_NOT_SUPPORTED;
  const int fd = fcntl(reinterpret_cast<PhysicalMemory*>(handle)->fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  *static_cast<int*>(shareable) = fd;
  return CUDA_SUCCESS;
}

// Takes only this driver's memfds: their name says so, and which device they are on.
CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle* handle, void* shareable,
                                        CUmemAllocationHandleType type) {
  if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return CUDA_ERROR_NOT_SUPPORTED;
  const int fd = static_cast<int>(reinterpret_cast<intptr_t>(shareable));
  char target[256] = {};
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  if (readlink(link.c_str(), target, sizeof target - 1) < 0) return CUDA_ERROR_INVALID_VALUE;
  const std::string prefix = std::string("/memfd:") + kPhysicalName;
  struct stat info {};
  if (std::string(target).rfind(prefix, 0) != 0 || fstat(fd, &info) != 0 || info.st_size <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  const int ordinal = target[prefix.size()] - '0';
  const int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  *handle = reinterpret_cast<uintptr_t>(
      new PhysicalMemory{copy, static_cast<size_t>(info.st_size), ordinal});
  return CUDA_SUCCESS;
}

// Test hook: the kernels launched so far.
long hostCudaKernelsLaunched() {
  return kernelsLaunched.load();
}

// Test hook: of them, those that ran a tree's schedule.
long hostCudaTreeKernelsLaunched() {
  return treeKernelsLaunched.load();
}

// Test hook: of those, the launches in which this rank is interior on both of the first two
// channels' trees.
long hostCudaTreeKernelsInteriorTwice() {
  return treeKernelsInteriorTwice.load();
}

// Test hook: launches of the kernel named `name` fail from now on, as a driver's can
// (CUDA_ERROR_LAUNCH_FAILED); "" ends that.
void hostCudaFailLaunchesOf(const char* name) {
  std::lock_guard lock(mutex);
  failingKernel = nullptr;
  if (const auto it = kKernels.find(name); it != kKernels.end()) failingKernel = &it->second;
}

CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  if (contextStack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (!image) return CUDA_ERROR_INVALID_IMAGE;
  *module = reinterpret_cast<CUmodule>(&moduleToken);
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name) {
  if (module != reinterpret_cast<CUmodule>(&moduleToken)) return CUDA_ERROR_INVALID_HANDLE;
  const auto it = kKernels.find(name);
  if (it == kKernels.end()) return CUDA_ERROR_NOT_FOUND;
  *function = reinterpret_cast<CUfunction>(const_cast<HostKernel*>(&it->second));
  return CUDA_SUCCESS;
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, CUfunction, int, size_t) {
  *blocks = environmentInt("HOST_CUDA_BLOCKS_PER_SM", device::kMaxChannels);
  return CUDA_SUCCESS;
}

// gridDim.x blocks, each a CPU thread running the kernel's channel; the stream goes on when all
// have returned.
CUresult cuLaunchKernel(CUfunction function, unsigned blocks, unsigned, unsigned, unsigned,
                        unsigned, unsigned, unsigned, CUstream handle, void** params, void**) {
  Stream* stream = streamOf(handle);
  if (!stream || contextStack.empty())
    return stream ? CUDA_ERROR_INVALID_CONTEXT : CUDA_ERROR_INVALID_HANDLE;
  if (!function || !params || blocks == 0 || blocks > device::kMaxChannels)
    return CUDA_ERROR_INVALID_VALUE;
  {
    std::lock_guard lock(mutex);
    if (reinterpret_cast<const HostKernel*>(function) == failingKernel)
      return CUDA_ERROR_LAUNCH_FAILED;
  }
  const HostKernel kernel = *reinterpret_cast<HostKernel*>(function);
  kernelsLaunched.fetch_add(1);
  const device::Launch l = onHost(*static_cast<const device::Launch*>(params[0]));
  if (l.algorithm == device::Algorithm::kTree) {
    treeKernelsLaunched.fetch_add(1);
    if (l.nchannels >= 2 && l.tree[0].nchildren > 0 && l.tree[1].nchildren > 0)
      treeKernelsInteriorTwice.fetch_add(1);
  }
  stream->enqueue([kernel, l, blocks] {
    std::vector<std::thread> threads;
    for (unsigned b = 0; b < blocks; ++b)
      threads.emplace_back(runBlock, kernel, std::cref(l), static_cast<int>(b));
    for (std::thread& t : threads) t.join();
  });
  return CUDA_SUCCESS;
}

CUresult cuStreamQuery(CUstream handle) {
  Stream* stream = streamOf(handle);
  if (!stream) return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard lock(stream->mutex);
  return stream->finished == stream->enqueued ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult cuEventCreate(CUevent* event, unsigned) {
  auto created = std::make_shared<Event>();
  *event = reinterpret_cast<CUevent>(created.get());
  std::lock_guard lock(mutex);
  events[*event] = std::move(created);
  return CUDA_SUCCESS;
}

// As the driver's: what streams still wait for or record keeps the event until they are done.
CUresult cuEventDestroy_v2(CUevent event) {
  std::lock_guard lock(mutex);
  return events.erase(event) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuEventRecord(CUevent handle, CUstream stream_handle) {
  Stream* stream = streamOf(stream_handle);
  const std::shared_ptr<Event> event = eventOf(handle);
  if (!stream || !event) return CUDA_ERROR_INVALID_HANDLE;
  uint64_t record = 0;
  {
    std::lock_guard lock(event->mutex);
    record = ++event->recorded;
  }
  stream->enqueue([event, record] {
    {
      std::lock_guard lock(event->mutex);
      event->reached = std::max(event->reached, record);
    }
    event->cv.notify_all();
  });
  return CUDA_SUCCESS;
}

// Waits for the event's latest record at the time of the call, as the driver does.
CUresult cuStreamWaitEvent(CUstream stream_handle, CUevent handle, unsigned) {
  Stream* stream = streamOf(stream_handle);
  const std::shared_ptr<Event> event = eventOf(handle);
  if (!stream || !event) return CUDA_ERROR_INVALID_HANDLE;
  uint64_t record = 0;
  {
    std::lock_guard lock(event->mutex);
    record = event->recorded;
  }
  stream->enqueue([event, record] {
    std::unique_lock lock(event->mutex);
    event->cv.wait(lock, [&] { return event->reached >= record; });
  });
  return CUDA_SUCCESS;
}

}  // extern "C"
