#include "base/byte_codec.hpp"

#include <algorithm>
#include <cstdint>

namespace tutti {

ByteWriter& ByteWriter::zeros(size_t count) {
  static constexpr std::byte kZeros[64] = {};
  while (count > 0) {
    const size_t now = std::min(count, sizeof(kZeros));
    append(kZeros, now);
    count -= now;
  }
  return *this;
}

ByteWriter& ByteWriter::str(std::string_view value) {
  if (value.size() > UINT32_MAX)
    raise(ErrorCode::kInvalidArgument, "a string of {} bytes does not fit a u32 length",
          value.size());
  return u32(static_cast<uint32_t>(value.size())).raw(value);
}

void ByteWriter::overflow(size_t count) const {
  raise(ErrorCode::kInternal, "writing {} bytes at offset {} overflows a buffer of {} bytes", count,
        at_, fixed_.size());
}

void ByteReader::rawInto(std::span<std::byte> out) {
  const std::byte* from = take(out.size());
  if (!out.empty()) std::memcpy(out.data(), from, out.size());
}

std::string ByteReader::str(size_t maxBytes) {
  const uint32_t length = u32();
  if (length > maxBytes)
    fail("a string of {} bytes at offset {}, over the limit of {}", length, at_ - 4, maxBytes);
  const std::byte* from = take(length);
  return std::string(reinterpret_cast<const char*>(from), length);
}

void ByteReader::end() const {
  if (!atEnd()) fail("{} unexpected trailing bytes after offset {}", remaining(), at_);
}

void ByteReader::failWith(std::string_view problem) const {
  throw Error(code_, fmt::format("{}: {}", what_, problem));
}

void ByteReader::truncated(size_t count) const {
  fail("truncated: {} bytes, {} more wanted at offset {}", in_.size(), count, at_);
}

}  // namespace tutti
