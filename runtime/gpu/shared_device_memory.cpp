#include "runtime/gpu/shared_device_memory.hpp"

#include <cstdint>

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

// One allocation mapped into this process: its handle, and the address range it is mapped at.
struct SharedDeviceMemory::Mapping {
  CUmemGenericAllocationHandle handle = 0;
  CUdeviceptr address = 0;
  size_t bytes = 0;
  bool reserved = false, mapped = false;

  ~Mapping() {
    // Teardown goes on past a failure: what can be given back is.
    const Driver& d = driver();
    if (mapped) d.unmap(address, bytes);
    if (reserved) d.unreserve(address, bytes);
    if (handle) d.release(handle);
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

}  // namespace

SharedDeviceMemory SharedDeviceMemory::allocate(size_t bytes, int ordinal) {
  requireDevice(ordinal);
  if (bytes == 0) raise(ErrorCode::kInvalidArgument, "shared device memory of 0 bytes");
  const CUmemAllocationProp prop = propertiesOn(ordinal);
  auto mapping = std::make_unique<Mapping>();
  mapping->bytes = allocationBytes(bytes, ordinal);
  check(driver().create(&mapping->handle, mapping->bytes, &prop, 0), "cuMemCreate");
  mapping->mapFor(ordinal);
  return SharedDeviceMemory(std::move(mapping));
}

SharedDeviceMemory SharedDeviceMemory::import(const Fd& exported, size_t bytes, int ordinal) {
  requireDevice(ordinal);
  if (!exported.valid() || bytes == 0)
    raise(ErrorCode::kInvalidArgument, "importing shared device memory: no descriptor or 0 bytes");
  auto mapping = std::make_unique<Mapping>();
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

Fd SharedDeviceMemory::exportFd() const {
  int fd = -1;
  check(driver().exportHandle(&fd, mapping_->handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
        "cuMemExportToShareableHandle");
  return Fd(fd);
}

}  // namespace tutti::runtime::gpu
