#include "runtime/memory/peer_buffers.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <string>

#include "base/log.hpp"
#include "base/socket.hpp"

namespace tutti::runtime {
namespace {

// The peer's allocation, if /proc/<pid>/fd/<fd> is it (the same device and inode as the peer
// measured) and as large as it said.
transport::shm::Mapping mapAllocation(int peer, long pid, const RegisteredRange& range) {
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(range.fd);
  Fd fd(open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd.valid()) {
    log::info("registered memory of rank {} not reachable through {}: {}", peer, path,
              std::strerror(errno));
    return {};
  }
  struct stat identity {};
  if (fstat(fd.get(), &identity) != 0 || static_cast<uint64_t>(identity.st_dev) != range.device ||
      static_cast<uint64_t>(identity.st_ino) != range.inode ||
      static_cast<uint64_t>(identity.st_size) < range.allocationBytes) {
    log::info("{} is not rank {}'s registered memory (another pid namespace?)", path, peer);
    return {};
  }
  void* data =
      mmap(nullptr, range.allocationBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (data == MAP_FAILED) {
    log::info("mmap of rank {}'s registered memory failed: {}", peer, std::strerror(errno));
    return {};
  }
  return {data, range.allocationBytes};
}

}  // namespace

std::byte* PeerBuffers::map(int peer, long pid, const RegisteredRange& range, size_t bytes) {
  if (range.offset > range.allocationBytes || bytes > range.allocationBytes - range.offset)
    return nullptr;
  Mapped& entry = mapped_[{peer, range.fd}];
  if (entry.id != range.id) {  // a failure is remembered too: it is logged once, not per call
    entry.mapping = mapAllocation(peer, pid, range);
    entry.id = range.id;
  }
  if (!entry.mapping.data()) return nullptr;
  return entry.mapping.data() + range.offset;
}

}  // namespace tutti::runtime
