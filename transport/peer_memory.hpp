// Peer-memory access: a rank on this host reads another rank's buffers in place instead of
// receiving them through FIFO slots. A transport whose ranks can do that (its registry kind
// `sharesMemory`; shm today) exposes a PeerMemory (Transport::peerMemory()); the direct
// collectives ask runtime/connections.hpp for it and never name the mechanisms:
//   - registered memory (tutti_mem_alloc, allocateRegistered below): each allocation a memfd that
//     a peer opens through /proc/<pid>/fd/<fd> and maps (peer_memory/registered_memory.hpp);
//   - a peer's ordinary memory, copied through the kernel with process_vm_readv
//     (peer_memory/cross_memory.hpp).
// What a rank tells its peers so that they can reach its buffers is a MemoryOffer, which crosses
// processes in a versioned byte form (peer_memory/memory_offer.cpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "base/byte_codec.hpp"
#include "transport/shm/segment.hpp"

namespace tutti::transport {

// Page-aligned, zero-filled host memory that peers on this host can map, backed by memory now (a
// shortage is an Error here, not a SIGBUS at the first write). Throws kInvalidArgument for 0
// bytes, kSystem when the memory is not there.
void* allocateRegistered(size_t bytes);
// `data` must be what allocateRegistered returned (else kInvalidArgument naming it); nullptr is
// ignored. Peers that mapped it keep their mapping until they drop it.
void freeRegistered(void* data);

// 16 random bytes, fixed for a process's life, and where they are in its memory: a peer that
// reads them at that address through the kernel knows the pid it holds is this process (and not
// one of another pid namespace with the same number). A peer that sees its own nonce is this
// process: it can use the addresses as they are.
struct ProcessIdentity {
  std::array<uint8_t, 16> nonce{};
  uint64_t address = 0;
};

// Where a registered range lives, in the terms a peer needs to map it.
struct RegisteredRange {
  uint64_t id = 0;  // the allocation's, random: a cache key that no later allocation reuses
  uint64_t device = 0, inode = 0;  // the memfd's identity, checked by whoever opens it
  int32_t fd = -1;                 // in the owning process
  uint64_t allocationBytes = 0;
  uint64_t offset = 0;  // of the range within the allocation
};

// One buffer as its owner offers it.
struct BufferOffer {
  uint64_t address = 0;
  bool registered = false;
  RegisteredRange range;  // when registered
};

// What a rank offers its peers for one operation: which process it is, whether they may reach
// its ordinary memory too, and the buffer it reads from (send) and the one it writes (recv).
// An offer made with no buffers reaches nothing but the rank's own process.
struct MemoryOffer {
  bool anyBuffers = false;  // ordinary memory may be copied through the kernel, not only mapped
  ProcessIdentity process;
  BufferOffer send, recv;
};

// Its byte form, little-endian (base/byte_codec.hpp), led by a version so that a rank of another
// build is refused with both versions named instead of being misread:
//   u32 version | u8 anyBuffers | 16 bytes nonce | u64 nonce address | send buffer | recv buffer
// and each buffer: u64 address | u8 registered | u64 id | u64 device | u64 inode | i32 fd |
//   u64 allocationBytes | u64 offset
inline constexpr uint32_t kMemoryOfferVersion = 1;
inline constexpr size_t kBufferOfferBytes = 8 + 1 + 3 * 8 + 4 + 2 * 8;
inline constexpr size_t kMemoryOfferBytes = 4 + 1 + 16 + 8 + 2 * kBufferOfferBytes;
void writeMemoryOffer(ByteWriter& out, const MemoryOffer& offer);
// Fails `in` (its owner's error) for another version or a flag that is not 0 or 1.
MemoryOffer readMemoryOffer(ByteReader& in);

// How the rank that offered `reader` reaches `owner`'s buffer: at its address (one process), by
// mapping it (registered), through the kernel (both allow ordinary memory), or not at all. Every
// rank works it out alike for every pair, from the same offers.
enum class BufferReach { kAddress, kMapping, kKernel, kNone };
BufferReach reachOf(const MemoryOffer& reader, const MemoryOffer& owner, const BufferOffer& buffer);
bool sameProcess(const MemoryOffer& a, const MemoryOffer& b);

// A peer's buffer as this process reaches it: at `local` here (its own, a mapping, any buffer of
// this process), else at `remote` in process `pid`, through the kernel.
struct PeerView {
  std::byte* local = nullptr;
  uint64_t remote = 0;
  long pid = 0;
  // Copies `bytes` at byte `offset` of the buffer to `to` here: 0, or the errno of a copy through
  // the kernel that failed (ESRCH: the process is gone; EFAULT: the range is not mapped there).
  int copyTo(size_t offset, void* to, size_t bytes) const;
};

// One communicator's access to its peers' memory: the offers it makes, the peers' registered
// memory mapped here (on first use, kept for its life: a bucket is all-reduced every iteration;
// one mapping per peer file descriptor, so a peer that frees an allocation and gets the same
// descriptor number for a new one replaces the old mapping), and what its users learn once.
// Used by one thread at a time (the communicator's engine).
class PeerMemory {
 public:
  // This process's offer of its buffers [send, send + sendBytes) and [recv, recv + recvBytes)
  // (recv may be nullptr): registered ones are found by address.
  static MemoryOffer offer(bool anyBuffers, const void* send, size_t sendBytes, const void* recv,
                           size_t recvBytes);

  // `owner`'s buffer [0, bytes) (of rank `peer`, process `pid`) as `reader` (this rank's offer)
  // reaches it (reachOf; PeerView::local is nullptr through the kernel). nullopt for registered
  // memory that cannot be mapped here (no access to the peer's /proc entry, another pid namespace,
  // a file that is not the one described; logged at INFO once): the caller then falls back.
  std::optional<PeerView> open(int peer, long pid, const MemoryOffer& reader,
                               const MemoryOffer& owner, const BufferOffer& buffer, size_t bytes);

  // Whether the kernel copies from process `pid`'s memory here and `pid` is the process that
  // `owner` describes: false when the kernel refuses (logged at INFO with the reason) or the
  // identity bytes differ.
  static bool kernelReaches(long pid, const MemoryOffer& owner);

  // Whether the kernel copies from every peer's ordinary memory: nullopt until the ranks have
  // found out together, at the first operation that needs it.
  std::optional<bool> kernelCopies;
  // At least `bytes` for peers' data copied here before it is used; kept between calls.
  std::byte* staging(size_t bytes) {
    if (staging_.size() < bytes) staging_.resize(bytes);
    return staging_.data();
  }

 private:
  std::byte* map(int peer, long pid, const RegisteredRange& range, size_t bytes);

  struct Mapped {
    uint64_t id = 0;
    shm::Mapping mapping;
  };
  std::map<std::pair<int, int32_t>, Mapped> mapped_;  // by (peer, its fd)
  std::vector<std::byte> staging_;
};

}  // namespace tutti::transport
