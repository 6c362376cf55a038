// The hello that opens every tcp data socket, sent by the connecting (higher) rank and answered
// with a mirror image by the accepting (lower) rank:
//   u32 magic "tuth" | u16 version | u16 tag length | i32 from rank | i32 to rank |
//   u32 socket index | tag bytes
// all little-endian (base/byte_codec.hpp). The receiver knows the job tag, hence the hello's exact
// size, before reading it: nothing on the wire decides how much is read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tutti::transport::tcp {

struct Hello {
  int32_t from = 0;
  int32_t to = 0;
  uint32_t socket = 0;
  std::string jobTag;
};

inline constexpr uint32_t kHelloMagic = 0x68747574;  // "tuth" on the wire
inline constexpr uint16_t kHelloVersion = 1;
inline constexpr size_t kHelloHeaderBytes = 20;

inline size_t helloBytes(const std::string& jobTag) {
  return kHelloHeaderBytes + jobTag.size();
}
// Throws kInvalidArgument for a job tag longer than a u16 length can say.
std::string encodeHello(const Hello& hello);
// Decodes the helloBytes(jobTag) bytes read; throws Error kRemote saying what is wrong (magic,
// version, job tag, size). The ranks are the caller's to check.
Hello decodeHello(std::string_view bytes, const std::string& jobTag);

}  // namespace tutti::transport::tcp
