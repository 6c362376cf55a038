// The UCP tags of the ucx transport (ucx_link.hpp): 64 bits, [credit: 1][sender rank: 24]
// [counter: 39]. A data message's counter is its index among the messages from that sender to
// this worker; a credit's is how many of the receiver's messages the sender of the credit has
// released. Counters are kept in 64 bits at both ends and travel modulo 2^39: at most `slots`
// apart from what the other end knows, so they are put back together exactly (widen()).
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>

namespace tutti::transport::ucx {

inline constexpr int kMaxRanks = 1 << 24;
inline constexpr int kCounterBits = 39;
inline constexpr uint64_t kCounterMask = (uint64_t{1} << kCounterBits) - 1;
inline constexpr ucp_tag_t kCreditBit = uint64_t{1} << 63;
// Matches any credit from one sender: the credit bit and the rank.
inline constexpr ucp_tag_t kCreditMask = ~kCounterMask;
inline constexpr ucp_tag_t kExactMask = ~ucp_tag_t{0};

inline ucp_tag_t dataTag(int sender, uint64_t index) {
  return static_cast<uint64_t>(sender) << kCounterBits | (index & kCounterMask);
}

inline ucp_tag_t creditTag(int sender, uint64_t released) {
  return kCreditBit | dataTag(sender, released);
}

// The 64-bit counter whose low bits `tag` carries, given one not above it by more than 2^39 - 1.
inline uint64_t widen(uint64_t known, ucp_tag_t tag) {
  return known + ((tag - known) & kCounterMask);
}

}  // namespace tutti::transport::ucx
