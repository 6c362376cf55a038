#include "runtime/transport_addresses.hpp"

#include <fmt/format.h>

#include "base/byte_codec.hpp"
#include "base/error.hpp"

namespace tutti::runtime {
namespace {

// Generous bounds: names are short words, addresses a few dozen bytes (a UCX worker address a few
// hundred); a record past them is not a tutti rank's.
constexpr uint32_t kMaxTransports = 64;
constexpr size_t kMaxNameBytes = 64;
constexpr size_t kMaxAddressBytes = 64 * 1024;

}  // namespace

std::string encodeTransportAddresses(const TransportAddresses& addresses) {
  ByteWriter out;
  out.u32(static_cast<uint32_t>(addresses.size()));
  for (const auto& [name, address] : addresses) out.str(name).str(address);
  return std::string(out.bytes());
}

TransportAddresses decodeTransportAddresses(const std::string& bytes, int rank, int peer) {
  const std::string what = fmt::format("rank {}: rank {}'s transport addresses", rank, peer);
  ByteReader in(bytes, ErrorCode::kRemote, what);  // keeps a view of `what`
  const uint32_t count = in.u32();
  if (count > kMaxTransports) in.fail("{} transports, over the limit of {}", count, kMaxTransports);
  TransportAddresses addresses;
  for (uint32_t i = 0; i < count; ++i) {
    std::string name = in.str(kMaxNameBytes);
    std::string address = in.str(kMaxAddressBytes);
    if (!addresses.emplace(name, std::move(address)).second)
      in.fail("transport {} appears twice", name);
  }
  in.end();
  return addresses;
}

const std::string& addressOf(const TransportAddresses& addresses, const std::string& name, int rank,
                             int peer) {
  const auto found = addresses.find(name);
  if (found == addresses.end())
    raise(ErrorCode::kRemote,
          "rank {}: rank {} published no {} address, though both chose {} (do they run the same "
          "tutti build?)",
          rank, peer, name, name);
  return found->second;
}

}  // namespace tutti::runtime
