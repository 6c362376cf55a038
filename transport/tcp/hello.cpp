#include "transport/tcp/hello.hpp"

#include <cstring>

#include "base/error.hpp"

namespace tutti::transport::tcp {
namespace {

void put(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint64_t get(const uint8_t* in, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value |= uint64_t{in[i]} << (8 * i);
  return value;
}

}  // namespace

std::string encodeHello(const Hello& hello) {
  std::string out;
  out.reserve(helloBytes(hello.jobTag));
  put(out, kHelloMagic, 4);
  put(out, kHelloVersion, 2);
  put(out, hello.jobTag.size(), 2);
  put(out, static_cast<uint32_t>(hello.from), 4);
  put(out, static_cast<uint32_t>(hello.to), 4);
  put(out, hello.socket, 4);
  out += hello.jobTag;
  return out;
}

Hello decodeHello(const void* data, const std::string& jobTag) {
  const auto* in = static_cast<const uint8_t*>(data);
  if (get(in, 4) != kHelloMagic) raise(ErrorCode::kRemote, "not a tutti tcp hello (bad magic)");
  if (get(in + 4, 2) != kHelloVersion)
    raise(ErrorCode::kRemote, "hello of protocol version {}, this is version {}", get(in + 4, 2),
          kHelloVersion);
  const size_t tagLength = get(in + 6, 2);
  if (tagLength != jobTag.size() ||
      std::memcmp(in + kHelloHeaderBytes, jobTag.data(), jobTag.size()) != 0)
    raise(ErrorCode::kRemote, "hello for another job (its tag is not '{}')", jobTag);
  Hello hello;
  hello.from = static_cast<int32_t>(get(in + 8, 4));
  hello.to = static_cast<int32_t>(get(in + 12, 4));
  hello.socket = static_cast<uint32_t>(get(in + 16, 4));
  hello.jobTag = jobTag;
  return hello;
}

}  // namespace tutti::transport::tcp
