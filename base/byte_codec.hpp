// The one little-endian codec for every byte form that passes between processes: messages on a
// socket (the store's frames, the tcp hello and frame header) and records one process writes for
// others to read (the unique id, the shm segment header and departure note, the direct offers).
// A ByteWriter lays fields out little-endian whatever the host; a ByteReader reads them back,
// bounds-checked, and reports whatever is short, over a bound, left over or wrong through one
// error path: an Error with the code and the name of the bytes its owner gave it.
//
// Where the line is drawn: shared-memory words that processes read live through atomics (FIFO
// slot headers, head counters, a departure note's state word) stay integers in structs. A
// codec copies a record in one go; it cannot publish or acquire anything.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "base/error.hpp"

namespace tutti {

class ByteWriter {
 public:
  // Grows a string of its own.
  ByteWriter() = default;
  // Fills `buffer`, which the caller owns, and never allocates: for fixed layouts, per-message
  // headers among them. Writing past its end is a bug in the layout's code (kInternal).
  explicit ByteWriter(std::span<std::byte> buffer) : fixed_(buffer), isFixed_(true) {}

  ByteWriter& u8(uint8_t value) { return little(value); }
  ByteWriter& u16(uint16_t value) { return little(value); }
  ByteWriter& u32(uint32_t value) { return little(value); }
  ByteWriter& u64(uint64_t value) { return little(value); }
  ByteWriter& i32(int32_t value) { return little(static_cast<uint32_t>(value)); }
  ByteWriter& i64(int64_t value) { return little(static_cast<uint64_t>(value)); }
  // Exactly these bytes, no length before them: a field of fixed size.
  ByteWriter& raw(std::span<const std::byte> bytes) { return append(bytes.data(), bytes.size()); }
  ByteWriter& raw(std::string_view bytes) { return append(bytes.data(), bytes.size()); }
  ByteWriter& zeros(size_t count);
  // A u32 length, then the bytes; kInvalidArgument past 4 GiB.
  ByteWriter& str(std::string_view value);

  size_t size() const { return at_; }
  // What was written so far, in either mode; valid until the next write.
  std::string_view bytes() const {
    return isFixed_ ? std::string_view(reinterpret_cast<const char*>(fixed_.data()), at_) : grown_;
  }

 private:
  template <std::unsigned_integral T>
  ByteWriter& little(T value) {
    std::byte bytes[sizeof(T)];
    for (size_t i = 0; i < sizeof(T); ++i) bytes[i] = static_cast<std::byte>(value >> (8 * i));
    return append(bytes, sizeof(T));
  }
  ByteWriter& append(const void* data, size_t count) {
    if (!isFixed_) {
      grown_.append(static_cast<const char*>(data), count);
    } else {
      if (count > fixed_.size() - at_) overflow(count);
      if (count > 0) std::memcpy(fixed_.data() + at_, data, count);
    }
    at_ += count;
    return *this;
  }
  [[noreturn]] void overflow(size_t count) const;

  std::string grown_;
  std::span<std::byte> fixed_;
  bool isFixed_ = false;
  size_t at_ = 0;
};

class ByteReader {
 public:
  // Every error is Error(code, "<what>: <what is wrong>"). `bytes` and `what` (the bytes' name
  // for messages: "store client 10.0.0.2:41000", "rank 3's direct offer") must outlive the reader.
  ByteReader(std::span<const std::byte> bytes, ErrorCode code, std::string_view what)
      : in_(bytes), code_(code), what_(what) {}
  ByteReader(std::string_view bytes, ErrorCode code, std::string_view what)
      : ByteReader(std::as_bytes(std::span(bytes)), code, what) {}

  uint8_t u8() { return little<uint8_t>(); }
  uint16_t u16() { return little<uint16_t>(); }
  uint32_t u32() { return little<uint32_t>(); }
  uint64_t u64() { return little<uint64_t>(); }
  int32_t i32() { return static_cast<int32_t>(little<uint32_t>()); }
  int64_t i64() { return static_cast<int64_t>(little<uint64_t>()); }
  // The next `count` bytes, in place.
  std::span<const std::byte> raw(size_t count) { return {take(count), count}; }
  // Fills `out` with the next out.size() bytes.
  void rawInto(std::span<std::byte> out);
  // What ByteWriter::str wrote; a length over `maxBytes` is an error before anything is copied.
  std::string str(size_t maxBytes);

  size_t offset() const { return at_; }
  size_t remaining() const { return in_.size() - at_; }
  bool atEnd() const { return at_ == in_.size(); }
  // Throws unless every byte was read: trailing bytes are as wrong as missing ones.
  void end() const;

  // The reader's error for what its owner found wrong in the bytes (a magic, a version, a value
  // out of range).
  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) const {
    failWith(fmt::format(format, std::forward<Args>(args)...));
  }
  [[noreturn]] void failWith(std::string_view problem) const;

 private:
  template <std::unsigned_integral T>
  T little() {
    const std::byte* at = take(sizeof(T));
    T value = 0;
    for (size_t i = 0; i < sizeof(T); ++i)
      value = static_cast<T>(value | static_cast<T>(static_cast<T>(at[i]) << (8 * i)));
    return value;
  }
  const std::byte* take(size_t count) {
    if (count > in_.size() - at_) truncated(count);
    const std::byte* at = in_.data() + at_;
    at_ += count;
    return at;
  }
  [[noreturn]] void truncated(size_t count) const;

  std::span<const std::byte> in_;
  ErrorCode code_;
  std::string_view what_;
  size_t at_ = 0;
};

}  // namespace tutti
