// A direct offer: what a rank publishes to its peers before a direct collective (direct.hpp) so
// that they can reach its buffers: which call it makes, how long it trusts, which process it is
// and where its send and receive buffers are. It crosses processes as kOfferBytes, little-endian
// (base/byte_codec.hpp), led by a version: a rank of another tutti build is refused with both
// versions named instead of being misread.
//
//   u32 version | call (call_signature.hpp) | u8 anyBuffers | u8 forced | u64 timeoutMs |
//   16 bytes nonce | u64 nonce address | send buffer | recv buffer
// and each buffer: u64 address | u8 registered | u64 id | u64 device | u64 inode | i32 fd |
//   u64 allocationBytes | u64 offset
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "runtime/collectives/call_signature.hpp"
#include "runtime/memory/cross_memory.hpp"
#include "runtime/memory/registered_memory.hpp"

namespace tutti::runtime {

// One of an offer's two buffers.
struct OfferedBuffer {
  uint64_t address = 0;
  bool registered = false;
  RegisteredRange range;
};

struct Offer {
  CallSignature call{};     // so that an allgather never meets a reduce-scatter
  bool anyBuffers = false;  // TUTTI_DIRECT_BUFFERS=any: its ordinary memory may be reached too
  bool forced = false;      // its all-reduce is forced to direct (TUTTI_ALGO, set_algorithm)
  uint64_t timeoutMs = 0;   // its communicator's, when it made the offer
  ProcessIdentity process;
  OfferedBuffer send, recv;
};

inline constexpr uint32_t kOfferVersion = 1;
inline constexpr size_t kOfferedBufferBytes = 8 + 1 + 3 * 8 + 4 + 2 * 8;
inline constexpr size_t kOfferBytes =
    4 + kCallSignatureBytes + 2 + 8 + 16 + 8 + 2 * kOfferedBufferBytes;
using OfferBytes = std::array<std::byte, kOfferBytes>;

OfferBytes encodeOffer(const Offer& offer);
// Rank `peer`'s offer; kRemote naming it for another version or bytes that are not an offer.
Offer decodeOffer(const OfferBytes& bytes, int peer);

}  // namespace tutti::runtime
