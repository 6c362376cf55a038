#include "transport/peer_memory/registered_memory.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <mutex>
#include <random>

#include "base/error.hpp"
#include "base/socket.hpp"
#include "transport/shm/segment.hpp"

namespace tutti::transport {
namespace {

struct Allocation {
  Fd fd;
  shm::Mapping mapping;
  RegisteredRange range;  // offset 0
};

// Keyed by start address; any thread may allocate, free or look up.
struct Registry {
  std::mutex mutex;
  std::map<uintptr_t, Allocation> allocations;
  std::mt19937_64 ids{std::random_device{}()};
};

Registry& registry() {
  static Registry* instance = new Registry;  // never destroyed: frees may run at exit
  return *instance;
}

}  // namespace

void* allocateRegistered(size_t bytes) {
  if (bytes == 0) raise(ErrorCode::kInvalidArgument, "tutti_mem_alloc: bytes is 0");
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (bytes > static_cast<size_t>(INT64_MAX) - page)
    raise(ErrorCode::kInvalidArgument, "tutti_mem_alloc: {} bytes is more than a file can hold",
          bytes);
  const size_t mapped = (bytes + page - 1) / page * page;
  // Backing more than the host has would not fail cleanly: the OOM killer would pick a process.
  struct sysinfo host {};
  if (sysinfo(&host) == 0) {
    const uint64_t memory = (static_cast<uint64_t>(host.totalram) + host.totalswap) * host.mem_unit;
    if (mapped > memory)
      raise(ErrorCode::kSystem,
            "tutti_mem_alloc: {} bytes is more than this host's memory ({} bytes)", bytes, memory);
  }
  Fd fd(memfd_create("tutti-registered", MFD_CLOEXEC));
  if (!fd.valid()) throwSystemError("tutti_mem_alloc: memfd_create", errno);
  if (ftruncate(fd.get(), static_cast<off_t>(mapped)) != 0)
    throwSystemError(fmt::format("tutti_mem_alloc: ftruncate to {} bytes", mapped), errno);
  int rc;
  do rc = posix_fallocate(fd.get(), 0, static_cast<off_t>(mapped));
  while (rc == EINTR);
  if (rc != 0)
    throwSystemError(fmt::format("tutti_mem_alloc: backing {} bytes with memory", mapped), rc);
  struct stat identity {};
  if (fstat(fd.get(), &identity) != 0) throwSystemError("tutti_mem_alloc: fstat", errno);
  void* data = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (data == MAP_FAILED)
    throwSystemError(fmt::format("tutti_mem_alloc: mmap of {} bytes", mapped), errno);
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  Allocation allocation;
  allocation.mapping = shm::Mapping(data, mapped);
  allocation.range = {.id = r.ids(),
                      .device = static_cast<uint64_t>(identity.st_dev),
                      .inode = static_cast<uint64_t>(identity.st_ino),
                      .fd = fd.get(),
                      .allocationBytes = mapped,
                      .offset = 0};
  allocation.fd = std::move(fd);
  r.allocations.emplace(reinterpret_cast<uintptr_t>(data), std::move(allocation));
  return data;
}

void freeRegistered(void* data) {
  if (!data) return;
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  const auto found = r.allocations.find(reinterpret_cast<uintptr_t>(data));
  if (found == r.allocations.end())
    raise(ErrorCode::kInvalidArgument,
          "tutti_mem_free: {} is not the start of memory from tutti_mem_alloc (or was freed)",
          data);
  r.allocations.erase(found);  // unmaps it and closes the memfd
}

std::optional<RegisteredRange> findRegistered(const void* data, size_t bytes) {
  const auto start = reinterpret_cast<uintptr_t>(data);
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto after = r.allocations.upper_bound(start);
  if (after == r.allocations.begin()) return std::nullopt;
  const auto& [base, allocation] = *std::prev(after);
  const uintptr_t offset = start - base;
  const size_t size = allocation.mapping.bytes();
  if (offset > size || bytes > size - offset) return std::nullopt;
  RegisteredRange range = allocation.range;
  range.offset = offset;
  return range;
}

}  // namespace tutti::transport
