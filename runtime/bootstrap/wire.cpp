#include "runtime/bootstrap/wire.hpp"

#include <algorithm>

#include "base/socket.hpp"

namespace tutti::bootstrap::wire {

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
  ByteWriter frame;
  frame.u32(kMagic)
      .u16(kVersion)
      .u16(static_cast<uint16_t>(type))
      .u32(static_cast<uint32_t>(payload.size()))
      .raw(payload);
  writeAll(fd, frame.bytes().data(), frame.size(), deadline, what);
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
  ByteReader in(std::string_view(bytes.data(), bytes.size()), ErrorCode::kRemote, what);
  const uint32_t magic = in.u32();
  const uint16_t version = in.u16();
  const uint16_t type = in.u16();
  const uint32_t length = in.u32();
  if (magic != kMagic) in.fail("a frame with bad magic 0x{:08x}", magic);
  if (version != kVersion)
    in.fail("speaks bootstrap protocol version {}, this is version {}", version, kVersion);
  if (requests ? !isRequest(type) : !isReply(type)) in.fail("a frame of unknown type {}", type);
  if (length > kMaxPayloadBytes)
    in.fail("announced a frame of {} bytes, over the limit of {}", length, kMaxPayloadBytes);
  return Header{static_cast<Type>(type), length};
}

Request decodeRequest(const Frame& frame, const std::string& what) {
  ByteReader in = payloadReader(frame.payload, what);
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
    default: in.fail("{} out of place", typeName(frame.type));
  }
  in.end();
  return request;
}

std::string encodeClaim(const Claim& claim) {
  ByteWriter out;
  out.i32(claim.rank).i32(claim.nranks).str(claim.identity).str(claim.jobId);
  return std::string(out.bytes());
}

Claim decodeClaim(const Frame& frame, const std::string& what) {
  ByteReader in = payloadReader(frame.payload, what);
  if (frame.type != Type::kClaim) in.fail("{} instead of CLAIM", typeName(frame.type));
  Claim claim;
  claim.rank = in.i32();
  claim.nranks = in.i32();
  claim.identity = in.str(kMaxKeyBytes);
  claim.jobId = in.str(kMaxKeyBytes);
  in.end();
  return claim;
}

}  // namespace tutti::bootstrap::wire
