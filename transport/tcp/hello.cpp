#include "transport/tcp/hello.hpp"

#include <algorithm>
#include <limits>

#include "base/byte_codec.hpp"
#include "base/error.hpp"

namespace tutti::transport::tcp {

std::string encodeHello(const Hello& hello) {
  if (hello.jobTag.size() > std::numeric_limits<uint16_t>::max())
    raise(ErrorCode::kInvalidArgument, "tcp: a job tag of {} bytes is too long for the hello",
          hello.jobTag.size());
  ByteWriter out;
  out.u32(kHelloMagic)
      .u16(kHelloVersion)
      .u16(static_cast<uint16_t>(hello.jobTag.size()))
      .i32(hello.from)
      .i32(hello.to)
      .u32(hello.socket)
      .raw(hello.jobTag);
  return std::string(out.bytes());
}

Hello decodeHello(std::string_view bytes, const std::string& jobTag) {
  ByteReader in(bytes, ErrorCode::kRemote, "tcp hello");
  if (in.u32() != kHelloMagic) in.fail("not a tutti tcp hello (bad magic)");
  const uint16_t version = in.u16();
  if (version != kHelloVersion)
    in.fail("protocol version {}, this is version {}", version, kHelloVersion);
  const uint16_t tagLength = in.u16();
  Hello hello;
  hello.from = in.i32();
  hello.to = in.i32();
  hello.socket = in.u32();
  if (tagLength != jobTag.size() || in.remaining() != tagLength ||
      !std::ranges::equal(in.raw(tagLength), std::as_bytes(std::span(jobTag))))
    in.fail("for another job (its tag is not '{}')", jobTag);
  in.end();
  hello.jobTag = jobTag;
  return hello;
}

}  // namespace tutti::transport::tcp
