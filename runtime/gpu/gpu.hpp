// The runtime's view of GPU memory, with no CUDA type in sight: the driver (libcuda, loaded with
// dlopen on first need, never linked), what kind of memory a pointer is, and copies between device
// memory and pinned host memory. Built against the toolkit's cuda.h where the build found one;
// otherwise every pointer is host memory and whatever needs the driver says the build lacks it.
#pragma once

#include <cstddef>
#include <string>

namespace tutti::runtime::gpu {

enum class MemoryKind {
  kHost,            // ordinary host memory, or any pointer while no driver is loaded
  kRegisteredHost,  // page-locked host memory the driver knows (cudaHostAlloc/Register)
  kManaged,         // managed (unified) memory: reachable from host and device
  kDevice,          // device memory: the host must not touch it
};
const char* kindName(MemoryKind kind);

struct BufferKind {
  MemoryKind kind = MemoryKind::kHost;
  int device = -1;          // the device ordinal of device and managed memory
  void* context = nullptr;  // the CUcontext it belongs to (device and managed memory)
};

// Loads and initialises the driver once per process (TUTTI_CUDA_DRIVER names it); false when it
// cannot be used, which leaves every pointer host memory.
bool driverReady();
// Throws kSystem saying why the driver cannot be used (not loadable, the stub library, a build
// without cuda.h, TUTTI_CUDA_DRIVER=none); returns when it can.
void requireDriver();

// What ptr points to; kHost for every pointer while no driver is ready (the cheap path).
BufferKind classify(const void* ptr);

// "" when libtutti has the device collectives' kernels, else why not (a build without nvcc or
// without cuda.h).
std::string whyNoKernels();

// The devices the driver sees; 0 while no driver is ready.
int deviceCount();
// Device memory of `ordinal` (0 <= ordinal < deviceCount()) in its primary context, the one the
// CUDA runtime uses, for programs without the runtime (tutti-bench's device buffers). Throws
// kInvalidArgument for a bad ordinal or 0 bytes, kSystem when the driver refuses.
void* allocateDevice(size_t bytes, int ordinal);
// Frees what allocateDevice returned; nullptr is ignored.
void freeDevice(void* ptr);

// Synchronous copies on the calling thread's per-thread default stream (so that they do not wait
// for other threads' streams), in the context of the device memory's owner: the bytes have
// landed when they return.
void copyToHost(void* host, const void* device, size_t bytes, const BufferKind& owner);
void copyToDevice(void* device, const void* host, size_t bytes, const BufferKind& owner);
// Device memory to device memory of the same device, landed when it returns: a one-rank
// collective's whole work.
void copyOnDevice(void* to, const void* from, size_t bytes, const BufferKind& owner);

}  // namespace tutti::runtime::gpu
