#include "runtime/gpu/shared_device_memory.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "base/error.hpp"
#include "runtime/gpu/driver.hpp"
#include "runtime/gpu/gpu.hpp"

namespace tutti::runtime::gpu {
namespace {

CUmemAllocationProp propertiesOn(int ordinal) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = ordinal;
  return prop;
}

void requireDevice(int ordinal) {
  const int count = deviceCount();
  if (ordinal < 0 || ordinal >= count)
    raise(ErrorCode::kInvalidArgument, "device {} does not exist: the driver sees {} device(s)",
          ordinal, count);
}

}  // namespace

// One allocation mapped into this process: on the device, its handle and the address range it is
// mapped at; on the host, its memfd, where this process maps it, and its registration.
struct SharedDeviceMemory::Mapping {
  Placement placement = Placement::kDevice;
  CUmemGenericAllocationHandle handle = 0;
  CUdeviceptr address = 0;  // as the device sees it
  size_t bytes = 0;
  bool reserved = false, mapped = false;
  Fd memfd;
  void* host = nullptr;
  CUcontext registeredIn = nullptr;

  ~Mapping() {
    // Teardown goes on past a failure: what can be given back is.
    const Driver& d = driver();
    if (mapped) d.unmap(address, bytes);
    if (reserved) d.unreserve(address, bytes);
    if (handle) d.release(handle);
    if (registeredIn) {
      ContextScope scope(registeredIn);
      d.hostUnregister(host);
    }
    if (host) munmap(host, bytes);
  }

  // Maps the allocation `handle` of `bytes` at a range of its own, read-write for `ordinal`.
  void mapFor(int ordinal) {
    const Driver& d = driver();
    check(d.reserve(&address, bytes, 0, 0, 0), "cuMemAddressReserve");
    reserved = true;
    check(d.map(address, bytes, 0, handle, 0), "cuMemMap");
    mapped = true;
    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = ordinal;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    check(d.setAccess(address, bytes, &access, 1), "cuMemSetAccess");
  }

  // Maps `memfd` (of `bytes`) into this process and registers it, reachable from `ordinal`.
  void mapHostFor(int ordinal) {
    host = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memfd.get(), 0);
    if (host == MAP_FAILED) {
      host = nullptr;
      raise(ErrorCode::kSystem, "mapping shared host memory of {} bytes: {}", bytes,
            std::strerror(errno));
    }
    const CUcontext context = primaryContext(ordinal);
    ContextScope scope(context);
    const Driver& d = driver();
    check(d.hostRegister(host, bytes, CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE),
          "cuMemHostRegister");
    registeredIn = context;
    check(d.hostDevicePointer(&address, host, 0), "cuMemHostGetDevicePointer");
  }
};

namespace {

// `bytes` rounded up to the driver's allocation granularity on device `ordinal`: what an
// allocation of `bytes` holds, and what its importers map.
size_t allocationBytes(size_t bytes, int ordinal) {
  const CUmemAllocationProp prop = propertiesOn(ordinal);
  size_t granularity = 0;
  check(driver().granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
        "cuMemGetAllocationGranularity");
  return (bytes + granularity - 1) / granularity * granularity;
}

size_t pageBytes(size_t bytes) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

}  // namespace

SharedDeviceMemory SharedDeviceMemory::allocate(size_t bytes, int ordinal, Placement placement) {
  requireDevice(ordinal);
  if (bytes == 0) raise(ErrorCode::kInvalidArgument, "shared device memory of 0 bytes");
  auto mapping = std::make_unique<Mapping>();
  mapping->placement = placement;
  if (placement == Placement::kHost) {
    mapping->bytes = pageBytes(bytes);
    mapping->memfd = Fd(memfd_create("tutti-gpu-fifos", MFD_CLOEXEC));
    if (!mapping->memfd.valid() || ftruncate(mapping->memfd.get(), off_t(mapping->bytes)) != 0)
      raise(ErrorCode::kSystem, "shared host memory of {} bytes: {}", mapping->bytes,
            std::strerror(errno));
    mapping->mapHostFor(ordinal);
    return SharedDeviceMemory(std::move(mapping));
  }
  const CUmemAllocationProp prop = propertiesOn(ordinal);
  mapping->bytes = allocationBytes(bytes, ordinal);
  check(driver().create(&mapping->handle, mapping->bytes, &prop, 0), "cuMemCreate");
  mapping->mapFor(ordinal);
  return SharedDeviceMemory(std::move(mapping));
}

SharedDeviceMemory SharedDeviceMemory::import(const Fd& exported, size_t bytes, int ordinal,
                                              Placement placement) {
  requireDevice(ordinal);
  if (!exported.valid() || bytes == 0)
    raise(ErrorCode::kInvalidArgument, "importing shared device memory: no descriptor or 0 bytes");
  auto mapping = std::make_unique<Mapping>();
  mapping->placement = placement;
  if (placement == Placement::kHost) {
    // A mapping past the file's end would fault on first touch (SIGBUS): refused here.
    mapping->bytes = pageBytes(bytes);
    struct stat file {};
    if (fstat(exported.get(), &file) != 0 || !S_ISREG(file.st_mode) ||
        static_cast<size_t>(file.st_size) < mapping->bytes)
      raise(ErrorCode::kInvalidArgument,
            "descriptor {} is not shared host memory of {} bytes (a file of {} bytes)",
            exported.get(), mapping->bytes, static_cast<long long>(file.st_size));
    mapping->memfd = Fd(fcntl(exported.get(), F_DUPFD_CLOEXEC, 0));
    if (!mapping->memfd.valid())
      raise(ErrorCode::kSystem, "importing shared host memory: {}", std::strerror(errno));
    mapping->mapHostFor(ordinal);
    return SharedDeviceMemory(std::move(mapping));
  }
  mapping->bytes = allocationBytes(bytes, ordinal);
  const CUresult imported = driver().importHandle(
      &mapping->handle, reinterpret_cast<void*>(static_cast<intptr_t>(exported.get())),
      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  if (imported != CUDA_SUCCESS)
    raise(ErrorCode::kInvalidArgument,
          "descriptor {} is not exported device memory: cuMemImportFromShareableHandle: {}",
          exported.get(), describe(imported));
  mapping->mapFor(ordinal);
  return SharedDeviceMemory(std::move(mapping));
}

SharedDeviceMemory::SharedDeviceMemory(std::unique_ptr<Mapping> mapping)
    : mapping_(std::move(mapping)) {}
SharedDeviceMemory::SharedDeviceMemory(SharedDeviceMemory&&) noexcept = default;
SharedDeviceMemory& SharedDeviceMemory::operator=(SharedDeviceMemory&&) noexcept = default;
SharedDeviceMemory::~SharedDeviceMemory() = default;

void* SharedDeviceMemory::data() const {
  return reinterpret_cast<void*>(mapping_->address);
}

size_t SharedDeviceMemory::bytes() const {
  return mapping_->bytes;
}

Placement SharedDeviceMemory::placement() const {
  return mapping_->placement;
}

Fd SharedDeviceMemory::exportFd() const {
  if (mapping_->placement == Placement::kHost) {
    Fd copy(fcntl(mapping_->memfd.get(), F_DUPFD_CLOEXEC, 0));
    if (!copy.valid())
      raise(ErrorCode::kSystem, "exporting shared host memory: {}", std::strerror(errno));
    return copy;
  }
  int fd = -1;
  check(driver().exportHandle(&fd, mapping_->handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
        "cuMemExportToShareableHandle");
  return Fd(fd);
}

}  // namespace tutti::runtime::gpu
