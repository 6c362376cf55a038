// The store's frame decoder (runtime/bootstrap/wire.hpp) on a stranger's byte stream, read both
// as the server reads requests and as the client reads replies: frame after frame until the
// bytes run out or one is refused. Refusals must be kRemote Errors, never crashes or other errors.
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_support.hpp"
#include "runtime/bootstrap/wire.hpp"

namespace {

using namespace tutti::bootstrap;

void readStream(std::string_view bytes, bool requests) {
  const std::string what = "fuzz peer";
  while (bytes.size() >= wire::kHeaderBytes) {
    const wire::Header header = wire::decodeHeader(
        std::span<const char, wire::kHeaderBytes>(bytes.data(), wire::kHeaderBytes), requests,
        what);
    bytes.remove_prefix(wire::kHeaderBytes);
    if (header.length > bytes.size()) return;  // a socket would wait for the rest
    const wire::Frame frame{header.type, std::string(bytes.substr(0, header.length))};
    bytes.remove_prefix(header.length);
    // CLAIM and HELLO open a connection and are checked by the handshake; replies are parsed per
    // request.
    if (requests && frame.type == wire::Type::kClaim)
      wire::decodeClaim(frame, what);
    else if (requests && frame.type != wire::Type::kHello)
      wire::decodeRequest(frame, what);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tutti::fuzz::discardLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  for (const bool requests : {true, false})
    tutti::fuzz::accepts(tutti::ErrorCode::kRemote, [&] { readStream(bytes, requests); });
  return 0;
}
