// The store's wire format: every message is a 12-byte header {u32 magic, u16 version, u16 type,
// u32 length} followed by `length` payload bytes, all integers little-endian. The header is
// checked (magic, version, known type, length bound) before a single payload byte is allocated,
// and payloads are parsed with a bounds-checked ByteReader (base/byte_codec.hpp): nothing read
// from the network is trusted. Every violation by the peer is an Error kRemote naming it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/byte_codec.hpp"
#include "base/deadline.hpp"
#include "base/error.hpp"
#include "runtime/bootstrap/bootstrap.hpp"

namespace tutti::bootstrap::wire {

constexpr uint32_t kMagic = 0x53545554;  // the bytes "TUTS" (tutti store) on the wire
constexpr uint16_t kVersion = 2;         // 2: CLAIM opens every connection; FAIL
constexpr size_t kHeaderBytes = 12;
constexpr size_t kMaxKeyBytes = 1024;
constexpr size_t kMaxValueBytes = size_t{1} << 20;
constexpr size_t kMaxPayloadBytes = kMaxValueBytes + kMaxKeyBytes + 64;

enum class Type : uint16_t {
  // Requests, client to server.
  kHello = 1,  // empty; first frame after authentication
  kSet = 2,    // key, value
  kGet = 3,    // key, u64 wait ms
  kAdd = 4,    // key, i64 delta
  kCheck = 5,  // key
  kJoin = 6,   // i32 rank, i32 nranks, identity, u64 wait ms
  kClaim = 7,  // i32 rank, i32 nranks, identity, job id; first frame, before authentication
  kFail = 8,   // message: a member reports why the job cannot go on
  // Replies, server to client.
  kOk = 0x100,     // op-specific payload
  kError = 0x101,  // u8 ReplyCode, message
};
bool isRequest(uint16_t type);
bool isReply(uint16_t type);
const char* typeName(Type type);

// Carried by kError replies; the client turns them into Error codes.
enum class ReplyCode : uint8_t { kInvalidUsage = 1, kRemote = 2, kTimeout = 3 };

struct Frame {
  Type type = Type::kOk;
  std::string payload;
};

struct Header {
  Type type = Type::kOk;
  uint32_t length = 0;
};
// Checks a header's magic, version, type (requests on the server, replies on the client) and
// length bound; throws kRemote naming `what`. Takes bytes, not a socket, so it can be fuzzed.
Header decodeHeader(std::span<const char, kHeaderBytes> bytes, bool requests,
                    const std::string& what);

// A request as the server reads it; each field is used by the types its comment names.
struct Request {
  Type type = Type::kHello;
  std::string key;                    // SET, GET, ADD, CHECK; JOIN: the rank's identity
  std::string value;                  // SET; FAIL: the message
  std::chrono::milliseconds wait{0};  // GET, JOIN
  int64_t delta = 0;                  // ADD
  int32_t rank = 0;                   // JOIN
  int32_t nranks = 0;                 // JOIN
};
// Parses a request frame after HELLO; throws kRemote for a malformed payload or a type that has
// no place there.
Request decodeRequest(const Frame& frame, const std::string& what);

std::string encodeClaim(const Claim& claim);
// Parses the frame that opens a connection; throws kRemote unless it is a well-formed CLAIM.
Claim decodeClaim(const Frame& frame, const std::string& what);

void writeFrame(int fd, Type type, std::string_view payload, const Deadline& deadline,
                const std::string& what);
// Waits for the first header byte until `idle`, then wants the whole frame within `rest` of that
// byte. Returns nullopt when the peer closed the connection cleanly between frames. `requests`
// selects which types are acceptable (requests on the server, replies on the client).
std::optional<Frame> readFrame(int fd, bool requests, const Deadline& idle,
                               std::chrono::milliseconds rest, const std::string& what);

// A payload's reader: its errors are the peer's (kRemote) and name it.
inline ByteReader payloadReader(const std::string& payload, const std::string& what) {
  return ByteReader(payload, ErrorCode::kRemote, what);
}

}  // namespace tutti::bootstrap::wire
