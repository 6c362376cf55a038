#include "runtime/bootstrap/wire.hpp"

#include <algorithm>

#include "base/socket.hpp"

namespace tutti::bootstrap::wire {
namespace {

void putLittle(char* out, uint64_t value, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) out[i] = static_cast<char>((value >> (8 * i)) & 0xff);
}

uint64_t getLittle(const char* in, size_t bytes) {
  uint64_t value = 0;
  for (size_t i = 0; i < bytes; ++i) value |= uint64_t{static_cast<uint8_t>(in[i])} << (8 * i);
  return value;
}

}  // namespace

bool isRequest(uint16_t type) {
  return type >= static_cast<uint16_t>(Type::kHello) && type <= static_cast<uint16_t>(Type::kFail);
}

bool isReply(uint16_t type) {
  return type == static_cast<uint16_t>(Type::kOk) || type == static_cast<uint16_t>(Type::kError);
}

const char* typeName(Type type) {
  switch (type) {
    case Type::kHello: return "HELLO";
    case Type::kSet: return "SET";
    case Type::kGet: return "GET";
    case Type::kAdd: return "ADD";
    case Type::kCheck: return "CHECK";
    case Type::kJoin: return "JOIN";
    case Type::kClaim: return "CLAIM";
    case Type::kFail: return "FAIL";
    case Type::kOk: return "OK";
    case Type::kError: return "ERROR";
  }
  return "?";
}

void writeFrame(int fd, Type type, std::string_view payload, const Deadline& deadline,
                const std::string& what) {
  if (payload.size() > kMaxPayloadBytes)
    raise(ErrorCode::kInvalidArgument, "{} message of {} bytes exceeds the limit of {} bytes",
          typeName(type), payload.size(), kMaxPayloadBytes);
  std::string frame(kHeaderBytes, '\0');
  putLittle(&frame[0], kMagic, 4);
  putLittle(&frame[4], kVersion, 2);
  putLittle(&frame[6], static_cast<uint16_t>(type), 2);
  putLittle(&frame[8], payload.size(), 4);
  frame.append(payload);
  writeAll(fd, frame.data(), frame.size(), deadline, what);
}

std::optional<Frame> readFrame(int fd, bool requests, const Deadline& idle,
                               std::chrono::milliseconds restSpan, const std::string& what) {
  char header[kHeaderBytes];
  try {
    readAll(fd, header, 1, idle, what);
  } catch (const Error& error) {
    // A close (or reset) between frames is how a peer says goodbye.
    if (error.code() == ErrorCode::kRemote || error.code() == ErrorCode::kSystem)
      return std::nullopt;
    throw;
  }
  const Deadline rest = Deadline::after(restSpan);
  readAll(fd, header + 1, kHeaderBytes - 1, rest, what);
  const Header checked = decodeHeader(std::span<const char, kHeaderBytes>(header), requests, what);
  Frame frame;
  frame.type = checked.type;
  frame.payload.resize(checked.length);
  if (checked.length > 0) readAll(fd, frame.payload.data(), checked.length, rest, what);
  return frame;
}

Header decodeHeader(std::span<const char, kHeaderBytes> bytes, bool requests,
                    const std::string& what) {
  const uint32_t magic = static_cast<uint32_t>(getLittle(bytes.data(), 4));
  const uint16_t version = static_cast<uint16_t>(getLittle(bytes.data() + 4, 2));
  const uint16_t type = static_cast<uint16_t>(getLittle(bytes.data() + 6, 2));
  const uint32_t length = static_cast<uint32_t>(getLittle(bytes.data() + 8, 4));
  if (magic != kMagic)
    throw ProtocolError(fmt::format("{} sent a frame with bad magic 0x{:08x}", what, magic));
  if (version != kVersion)
    throw ProtocolError(fmt::format("{} speaks bootstrap protocol version {}, this is version {}",
                                    what, version, kVersion));
  if (requests ? !isRequest(type) : !isReply(type))
    throw ProtocolError(fmt::format("{} sent a frame of unknown type {}", what, type));
  if (length > kMaxPayloadBytes)
    throw ProtocolError(fmt::format("{} announced a frame of {} bytes, over the limit of {}", what,
                                    length, kMaxPayloadBytes));
  return Header{static_cast<Type>(type), length};
}

Request decodeRequest(const Frame& frame, const std::string& what) {
  Reader in(frame.payload, what);
  Request request;
  request.type = frame.type;
  // A wait longer than int64 milliseconds is forever all the same.
  const auto wait = [&in] {
    return std::chrono::milliseconds(std::min<uint64_t>(in.u64(), INT64_MAX));
  };
  switch (frame.type) {
    case Type::kSet:
      request.key = in.str(kMaxKeyBytes);
      request.value = in.str(kMaxValueBytes);
      break;
    case Type::kGet:
      request.key = in.str(kMaxKeyBytes);
      request.wait = wait();
      break;
    case Type::kAdd:
      request.key = in.str(kMaxKeyBytes);
      request.delta = in.i64();
      break;
    case Type::kCheck: request.key = in.str(kMaxKeyBytes); break;
    case Type::kJoin:
      request.rank = in.i32();
      request.nranks = in.i32();
      request.key = in.str(kMaxKeyBytes);
      request.wait = wait();
      break;
    case Type::kFail: request.value = in.str(kMaxValueBytes); break;
    default:
      throw ProtocolError(fmt::format("{} sent {} out of place", what, typeName(frame.type)));
  }
  in.end();
  return request;
}

std::string encodeClaim(const Claim& claim) {
  Writer out;
  out.i32(claim.rank).i32(claim.nranks).str(claim.identity).str(claim.jobId);
  return out.bytes();
}

Claim decodeClaim(const Frame& frame, const std::string& what) {
  if (frame.type != Type::kClaim)
    throw ProtocolError(fmt::format("{} sent {} instead of CLAIM", what, typeName(frame.type)));
  Reader in(frame.payload, what);
  Claim claim;
  claim.rank = in.i32();
  claim.nranks = in.i32();
  claim.identity = in.str(kMaxKeyBytes);
  claim.jobId = in.str(kMaxKeyBytes);
  in.end();
  return claim;
}

Writer& Writer::u8(uint8_t value) {
  out_.push_back(static_cast<char>(value));
  return *this;
}

Writer& Writer::i32(int32_t value) {
  char bytes[4];
  putLittle(bytes, static_cast<uint32_t>(value), 4);
  out_.append(bytes, 4);
  return *this;
}

Writer& Writer::u64(uint64_t value) {
  char bytes[8];
  putLittle(bytes, value, 8);
  out_.append(bytes, 8);
  return *this;
}

Writer& Writer::i64(int64_t value) {
  return u64(static_cast<uint64_t>(value));
}

Writer& Writer::str(std::string_view value) {
  char bytes[4];
  putLittle(bytes, value.size(), 4);
  out_.append(bytes, 4);
  out_.append(value);
  return *this;
}

void Reader::need(size_t bytes) const {
  if (in_.size() - at_ < bytes)
    throw ProtocolError(fmt::format("{} sent a truncated message ({} bytes, wanted {} more at {})",
                                    what_, in_.size(), bytes, at_));
}

uint64_t Reader::little(size_t bytes) {
  need(bytes);
  const uint64_t value = getLittle(in_.data() + at_, bytes);
  at_ += bytes;
  return value;
}

uint8_t Reader::u8() {
  return static_cast<uint8_t>(little(1));
}
int32_t Reader::i32() {
  return static_cast<int32_t>(static_cast<uint32_t>(little(4)));
}
uint64_t Reader::u64() {
  return little(8);
}
int64_t Reader::i64() {
  return static_cast<int64_t>(little(8));
}

std::string Reader::str(size_t maxBytes) {
  const uint64_t length = little(4);
  if (length > maxBytes)
    throw ProtocolError(
        fmt::format("{} sent a string of {} bytes, over the limit of {}", what_, length, maxBytes));
  need(length);
  std::string value = in_.substr(at_, length);
  at_ += length;
  return value;
}

void Reader::end() const {
  if (at_ != in_.size())
    throw ProtocolError(
        fmt::format("{} sent {} unexpected trailing bytes", what_, in_.size() - at_));
}

}  // namespace tutti::bootstrap::wire
