// A direct offer: what a rank publishes to its peers before a direct collective (direct.hpp):
// which call it makes, how long it trusts, and the peer-memory offer of its send and receive
// buffers (transport/peer_memory.hpp: which process it is, where the buffers are). It crosses
// processes as kOfferBytes, little-endian (base/byte_codec.hpp), led by a version: a rank of
// another tutti build is refused with both versions named instead of being misread.
//
//   u32 version | call (call_signature.hpp) | u8 forced | u64 timeoutMs |
//   peer-memory offer (its own leading version; transport/peer_memory.hpp has its layout)
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "runtime/collectives/call_signature.hpp"
#include "transport/peer_memory.hpp"

namespace tutti::runtime {

struct Offer {
  CallSignature call{};    // so that an allgather never meets a reduce-scatter
  bool forced = false;     // its all-reduce is forced to direct (TUTTI_ALGO, set_algorithm)
  uint64_t timeoutMs = 0;  // its communicator's, when it made the offer
  transport::MemoryOffer memory;
};

inline constexpr uint32_t kOfferVersion = 2;
inline constexpr size_t kOfferBytes =
    4 + kCallSignatureBytes + 1 + 8 + transport::kMemoryOfferBytes;
using OfferBytes = std::array<std::byte, kOfferBytes>;

OfferBytes encodeOffer(const Offer& offer);
// Rank `peer`'s offer; kRemote naming it for another version (of the offer or of its peer-memory
// part) or bytes that are not an offer.
Offer decodeOffer(const OfferBytes& bytes, int peer);

}  // namespace tutti::runtime
