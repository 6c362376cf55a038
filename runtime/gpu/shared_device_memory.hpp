// Device memory that the other processes of a host map: CUDA IPC through the driver's virtual
// memory API, as NCCL does since 2.19 (cuMemCreate with a POSIX file-descriptor handle, mapped at
// an address range of its own, readable and writable by its device). The exporter passes the
// descriptor to a peer (base/fd_mailbox.hpp); the peer maps the same physical memory for its own
// device, the same GPU or one it reaches over NVLink or PCIe. The device FIFOs of the GPU path
// live in it. Where two GPUs cannot reach each other's memory (no peer access: e.g. behind
// different PCIe root complexes), the same object holds pinned host memory both reach instead, as
// NCCL's shm transport does: a memfd both processes map and register with the driver
// (cuMemHostRegister, device-mapped and portable), so that each GPU reads and writes it over PCIe.
// Move-only; unmapped and released with the object. Only in builds with the GPU path (cuda.h
// found): nothing in a build without it maps device memory.
#pragma once

#include <cstddef>
#include <memory>

#include "base/socket.hpp"

namespace tutti::runtime::gpu {

// Where the memory lies: in the GPU's memory, or in pinned host memory.
enum class Placement { kDevice, kHost };

class SharedDeviceMemory {
 public:
  // At least `bytes` (rounded up to the driver's allocation granularity, or to a page on the
  // host) on device `ordinal`, or for it in host memory. Throws kInvalidArgument for 0 bytes or a
  // device that does not exist, kSystem when the driver or the system refuses.
  static SharedDeviceMemory allocate(size_t bytes, int ordinal,
                                     Placement placement = Placement::kDevice);
  // A peer's allocate(bytes, placement) (the same `bytes`, or its bytes()), from the descriptor
  // it exported, mapped for device `ordinal`. Throws kInvalidArgument when the descriptor is not
  // such an allocation (on the host: smaller than `bytes`).
  static SharedDeviceMemory import(const Fd& exported, size_t bytes, int ordinal,
                                   Placement placement = Placement::kDevice);

  SharedDeviceMemory(SharedDeviceMemory&&) noexcept;
  SharedDeviceMemory& operator=(SharedDeviceMemory&&) noexcept;
  ~SharedDeviceMemory();

  void* data() const;  // as the device sees it
  size_t bytes() const;
  Placement placement() const;
  // A new descriptor for a peer to import.
  Fd exportFd() const;

 private:
  struct Mapping;
  explicit SharedDeviceMemory(std::unique_ptr<Mapping> mapping);
  std::unique_ptr<Mapping> mapping_;
};

}  // namespace tutti::runtime::gpu
