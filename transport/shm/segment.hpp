// POSIX shared-memory segments: the one a rank creates for its incoming FIFOs, and mappings of
// parts of it or of a peer's segment. The segment starts with a header page that says who made
// it and with which options, so that a peer opening it can refuse a mismatch instead of writing
// past the end of a smaller FIFO.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/auth.hpp"
#include "base/socket.hpp"

namespace tutti::transport::shm {

// A shared mapping, unmapped on destruction.
class Mapping {
 public:
  Mapping() = default;
  Mapping(void* address, size_t bytes) : address_(address), bytes_(bytes) {}
  Mapping(Mapping&& other) noexcept;
  Mapping& operator=(Mapping&& other) noexcept;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping();

  std::byte* data() const { return static_cast<std::byte*>(address_); }
  size_t bytes() const { return bytes_; }

 private:
  void* address_ = nullptr;
  size_t bytes_ = 0;
};

// Written at offset 0 of every segment, checked by whoever opens it. Its bytes, little-endian
// (base/byte_codec.hpp):
//   u64 magic "tsegment" | u32 version | i32 rank | i32 nranks | u32 slots | u64 slotBytes |
//   u64 fifoBytes | u64 jobHash
struct SegmentHeader {
  int32_t rank = 0;
  int32_t nranks = 0;
  uint32_t slots = 0;
  uint64_t slotBytes = 0;
  uint64_t fifoBytes = 0;
  uint64_t jobHash = 0;  // of the communicator's tag: a segment of another job is refused

  static constexpr uint64_t kMagic = 0x746e656d67657374;  // "tsegment"
  // 4: the header page holds a departure note; 5: the note's record is a byte_codec record;
  // 6: a slot header is its publication (no tail counter); 7: the header is two lines, carrying
  // up to 88 payload bytes
  static constexpr uint32_t kVersion = 7;
  static constexpr size_t kEncodedBytes = 48;
  // The header page; FIFOs follow it.
  static constexpr size_t kBytes = 4096;

  std::array<std::byte, kEncodedBytes> encode() const;
  // Throws kInvalidUsage naming `what` (the segment) for bytes without the magic or of another
  // layout version.
  static SegmentHeader decode(std::span<const std::byte, kEncodedBytes> bytes,
                              std::string_view what);
};

uint64_t hashJobTag(const std::string& jobTag);

// "/<segmentNamePrefix(secret)><jobTag>-<rank>-<16 random hex digits>": unguessable, so nobody
// else can pre-create it, and known to the job's launcher by its prefix (base/auth.hpp).
std::string randomSegmentName(const Secret& secret, const std::string& jobTag, int rank);

// The segment this rank owns. The constructor creates it (O_CREAT|O_EXCL, mode 0600) with its
// full size as a sparse file and allocates only the header page; allocate() backs a range with
// memory later, when it is known to be needed.
class OwnSegment {
 public:
  OwnSegment(std::string name, size_t bytes, const SegmentHeader& header);
  OwnSegment(const OwnSegment&) = delete;
  OwnSegment& operator=(const OwnSegment&) = delete;
  ~OwnSegment();  // unlinks the name if unlink() was not called

  const std::string& name() const { return name_; }
  // Backs [offset, offset + bytes) with memory now (posix_fallocate), so a full /dev/shm is an
  // Error here rather than a SIGBUS at the first write. `what` says what the range is for.
  void allocate(size_t offset, size_t bytes, const std::string& what);
  Mapping map(size_t offset, size_t bytes) const;
  // Removes the name; existing mappings stay valid. Idempotent.
  void unlink();

 private:
  std::string name_;
  Fd fd_;
  size_t bytes_ = 0;
  bool linked_ = false;
};

// Removes a segment's name (its mappings stay valid); a name already removed is no error. Every
// rank removes its peers' names as well as its own once all have mapped them, so that a peer that
// dies before it removes its own leaves nothing behind.
void unlinkSegmentName(const std::string& name);

// Opens the segment `name`, which `expect.rank` created, checks its header against `expect`
// (every field), and maps [offset, offset + bytes) of it read-write.
Mapping mapPeerSegment(const std::string& name, const SegmentHeader& expect, size_t offset,
                       size_t bytes);

}  // namespace tutti::transport::shm
