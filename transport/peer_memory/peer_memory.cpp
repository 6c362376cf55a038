#include "transport/peer_memory.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "base/log.hpp"
#include "base/socket.hpp"
#include "kernels/kernels.hpp"
#include "transport/peer_memory/cross_memory.hpp"
#include "transport/peer_memory/registered_memory.hpp"

namespace tutti::transport {
namespace {

BufferOffer bufferOffer(const void* data, size_t bytes) {
  BufferOffer offered;
  offered.address = reinterpret_cast<uint64_t>(data);
  if (const auto range = findRegistered(data, bytes)) {
    offered.registered = true;
    offered.range = *range;
  }
  return offered;
}

// The peer's allocation, if /proc/<pid>/fd/<fd> is it (the same device and inode as the peer
// measured) and as large as it said.
shm::Mapping mapAllocation(int peer, long pid, const RegisteredRange& range) {
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

bool sameProcess(const MemoryOffer& a, const MemoryOffer& b) {
  return a.process.nonce == b.process.nonce && a.process.address == b.process.address;
}

BufferReach reachOf(const MemoryOffer& reader, const MemoryOffer& owner,
                    const BufferOffer& buffer) {
  const bool here = sameProcess(reader, owner);
  if (buffer.registered) return here ? BufferReach::kAddress : BufferReach::kMapping;
  if (!reader.anyBuffers || !owner.anyBuffers) return BufferReach::kNone;
  return here ? BufferReach::kAddress : BufferReach::kKernel;
}

int PeerView::copyTo(size_t offset, void* to, size_t bytes) const {
  if (!local) return readCrossMemory(pid, to, remote + offset, bytes);
  if (local + offset != to) kernels::copy(&to, 1, local + offset, bytes);
  return 0;
}

MemoryOffer PeerMemory::offer(bool anyBuffers, const void* send, size_t sendBytes, const void* recv,
                              size_t recvBytes) {
  MemoryOffer offer;
  offer.anyBuffers = anyBuffers;
  offer.process = thisProcess();
  offer.send = bufferOffer(send, sendBytes);
  if (recv) offer.recv = bufferOffer(recv, recvBytes);
  return offer;
}

std::optional<PeerView> PeerMemory::open(int peer, long pid, const MemoryOffer& reader,
                                         const MemoryOffer& owner, const BufferOffer& buffer,
                                         size_t bytes) {
  PeerView view{nullptr, buffer.address, pid};
  switch (reachOf(reader, owner, buffer)) {
    case BufferReach::kAddress: view.local = reinterpret_cast<std::byte*>(buffer.address); break;
    case BufferReach::kMapping:
      view.local = map(peer, pid, buffer.range, bytes);
      if (!view.local) return std::nullopt;
      break;
    case BufferReach::kKernel:
    case BufferReach::kNone: break;
  }
  return view;
}

bool PeerMemory::kernelReaches(long pid, const MemoryOffer& owner) {
  return crossMemoryReaches(pid, owner.process);
}

std::byte* PeerMemory::map(int peer, long pid, const RegisteredRange& range, size_t bytes) {
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

}  // namespace tutti::transport
