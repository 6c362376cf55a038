#include "transport/shm/segment.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "base/byte_codec.hpp"
#include "base/error.hpp"
#include "base/log.hpp"

namespace tutti::transport::shm {
namespace {

std::string humanBytes(uint64_t bytes) {
  if (bytes >= (uint64_t{1} << 30)) return fmt::format("{:.1f} GiB", bytes / double(1 << 30));
  if (bytes >= (uint64_t{1} << 20)) return fmt::format("{:.1f} MiB", bytes / double(1 << 20));
  return fmt::format("{:.1f} KiB", bytes / 1024.0);
}

// Free bytes of the file system behind /dev/shm, or -1 when unknown.
int64_t devShmFreeBytes() {
  struct statvfs info {};
  if (statvfs("/dev/shm", &info) != 0) return -1;
  return static_cast<int64_t>(info.f_bavail) * static_cast<int64_t>(info.f_frsize);
}

[[noreturn]] void raiseNoSpace(const std::string& name, size_t bytes, const std::string& what,
                               int err) {
  const int64_t free = devShmFreeBytes();
  raise(ErrorCode::kSystem,
        "shm: not enough space in /dev/shm for segment {}: {} needs {} bytes ({}), /dev/shm has "
        "{} free ({}); enlarge /dev/shm (e.g. docker run --shm-size) or use fewer or smaller "
        "slots",
        name, what, bytes, humanBytes(bytes),
        free < 0 ? std::string("an unknown amount") : humanBytes(static_cast<uint64_t>(free)),
        std::strerror(err));
}

}  // namespace

Mapping::Mapping(Mapping&& other) noexcept
    : address_(std::exchange(other.address_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

Mapping& Mapping::operator=(Mapping&& other) noexcept {
  if (this != &other) {
    if (address_) munmap(address_, bytes_);
    address_ = std::exchange(other.address_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

Mapping::~Mapping() {
  if (address_) munmap(address_, bytes_);
}

std::array<std::byte, SegmentHeader::kEncodedBytes> SegmentHeader::encode() const {
  std::array<std::byte, kEncodedBytes> bytes{};
  ByteWriter(bytes)
      .u64(kMagic)
      .u32(kVersion)
      .i32(rank)
      .i32(nranks)
      .u32(slots)
      .u64(slotBytes)
      .u64(fifoBytes)
      .u64(jobHash);
  return bytes;
}

SegmentHeader SegmentHeader::decode(std::span<const std::byte, kEncodedBytes> bytes,
                                    std::string_view what) {
  ByteReader in(bytes, ErrorCode::kInvalidUsage, what);
  if (in.u64() != kMagic) in.fail("not a tutti segment (bad magic)");
  const uint32_t version = in.u32();
  if (version != kVersion)
    in.fail("made by another tutti version: layout version {}, this rank's is {}", version,
            kVersion);
  SegmentHeader header;
  header.rank = in.i32();
  header.nranks = in.i32();
  header.slots = in.u32();
  header.slotBytes = in.u64();
  header.fifoBytes = in.u64();
  header.jobHash = in.u64();
  in.end();
  return header;
}

uint64_t hashJobTag(const std::string& jobTag) {
  uint64_t hash = 0xcbf29ce484222325;  // FNV-1a: identifies, need not resist forgery
  for (const unsigned char c : jobTag) hash = (hash ^ c) * 0x100000001b3;
  return hash;
}

std::string randomSegmentName(const Secret& secret, const std::string& jobTag, int rank) {
  uint64_t random = 0;
  auto* p = reinterpret_cast<char*>(&random);
  size_t got = 0;
  while (got < sizeof(random)) {
    const ssize_t n = getrandom(p + got, sizeof(random) - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throwSystemError("getrandom", errno);
    got += static_cast<size_t>(n);
  }
  return fmt::format("/{}{}-{}-{:016x}", segmentNamePrefix(secret), jobTag, rank, random);
}

OwnSegment::OwnSegment(std::string name, size_t bytes, const SegmentHeader& header)
    : name_(std::move(name)), bytes_(bytes) {
  fd_ = Fd(shm_open(name_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd_.valid()) throwSystemError("shm: shm_open " + name_, errno);
  linked_ = true;
  // A throwing constructor runs no destructor: each failure below unlinks the name itself.
  if (ftruncate(fd_.get(), static_cast<off_t>(bytes_)) != 0) {
    const int err = errno;
    unlink();
    if (err == ENOSPC || err == EFBIG) raiseNoSpace(name_, bytes_, "the sparse segment", err);
    throwSystemError("shm: ftruncate " + name_, err);
  }
  try {
    allocate(0, SegmentHeader::kBytes, "the header page");
  } catch (...) {
    unlink();
    throw;
  }
  const auto encoded = header.encode();
  if (pwrite(fd_.get(), encoded.data(), encoded.size(), 0) !=
      static_cast<ssize_t>(encoded.size())) {
    const int err = errno;
    unlink();
    throwSystemError("shm: writing the header of " + name_, err);
  }
}

OwnSegment::~OwnSegment() {
  unlink();
}

void OwnSegment::allocate(size_t offset, size_t bytes, const std::string& what) {
  int rc;
  do {
    // posix_fallocate returns the error instead of setting errno.
    rc = posix_fallocate(fd_.get(), static_cast<off_t>(offset), static_cast<off_t>(bytes));
  } while (rc == EINTR);
  if (rc == ENOSPC || rc == EFBIG || rc == ENOMEM) raiseNoSpace(name_, bytes, what, rc);
  if (rc != 0) throwSystemError("shm: posix_fallocate " + name_, rc);
}

Mapping OwnSegment::map(size_t offset, size_t bytes) const {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_.get(),
                 static_cast<off_t>(offset));
  if (p == MAP_FAILED) throwSystemError("shm: mmap " + name_, errno);
  return Mapping(p, bytes);
}

void OwnSegment::unlink() {
  if (!linked_) return;
  linked_ = false;
  unlinkSegmentName(name_);
}

void unlinkSegmentName(const std::string& name) {
  // ENOENT: a peer's connected() was first.
  if (shm_unlink(name.c_str()) != 0 && errno != ENOENT)
    log::warn("shm: shm_unlink {}: {} (errno {})", name, std::strerror(errno), errno);
}

Mapping mapPeerSegment(const std::string& name, const SegmentHeader& expect, size_t offset,
                       size_t bytes) {
  const int r = expect.rank;
  if (name.empty() || name[0] != '/' || name.find('/', 1) != std::string::npos)
    raise(ErrorCode::kInvalidArgument, "shm: rank {}'s address '{}' is not a segment name", r,
          name);
  Fd fd(shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0));
  if (!fd.valid()) {
    const int err = errno;
    if (err == ENOENT)
      raise(ErrorCode::kInvalidUsage,
            "shm: rank {}'s segment {} does not exist (is rank {} on another host, or did it "
            "call connected() before this rank connected?)",
            r, name, r);
    throwSystemError(fmt::format("shm: shm_open {} of rank {}", name, r), err);
  }
  const std::string what = fmt::format("shm: {} (the address of rank {})", name, r);
  std::array<std::byte, SegmentHeader::kEncodedBytes> header{};
  struct stat info {};
  if (fstat(fd.get(), &info) != 0) throwSystemError("shm: fstat " + name, errno);
  if (static_cast<size_t>(info.st_size) < offset + bytes ||
      pread(fd.get(), header.data(), header.size(), 0) != static_cast<ssize_t>(header.size()))
    raise(ErrorCode::kInvalidUsage, "{}: not a tutti segment (too short)", what);
  const SegmentHeader got = SegmentHeader::decode(header, what);
  // A segment this user did not create with mode 0600 could be read or written by others.
  if (info.st_uid != geteuid() || (info.st_mode & 0777) != 0600)
    raise(ErrorCode::kInvalidUsage,
          "{}: refused, owned by uid {} with mode {:o}, expected uid {} and mode 600", what,
          info.st_uid, info.st_mode & 0777, geteuid());
  if (got.jobHash != expect.jobHash)
    raise(ErrorCode::kInvalidUsage, "{}: refused, it belongs to another job", what);
  if (got.rank != expect.rank)
    raise(ErrorCode::kInvalidUsage, "shm: the address of rank {} names the segment of rank {}", r,
          got.rank);
  if (got.nranks != expect.nranks || got.slots != expect.slots ||
      got.slotBytes != expect.slotBytes || got.fifoBytes != expect.fifoBytes)
    raise(ErrorCode::kInvalidUsage,
          "shm: rank {} uses nranks={} slots={} slotBytes={} but this rank uses nranks={} "
          "slots={} slotBytes={}: every rank must use the same options",
          r, got.nranks, got.slots, got.slotBytes, expect.nranks, expect.slots, expect.slotBytes);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(),
                 static_cast<off_t>(offset));
  if (p == MAP_FAILED) throwSystemError(fmt::format("shm: mmap {} of rank {}", name, r), errno);
  return Mapping(p, bytes);
}

}  // namespace tutti::transport::shm
