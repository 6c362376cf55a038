// The UCP tags of the ucx transport (ucx_link.hpp): 64 bits, [kind: 2][sender rank: 23]
// [counter: 39]. Kinds: a data message, whose counter is its index among the messages from that
// sender to this worker; a credit, whose counter is how many of the receiver's messages the
// sender of the credit has released; a bye, sent by a rank that leaves, whose counter is how many
// messages it sent; a got, the answer to a bye, whose counter is how many of those have arrived.
// Counters are kept in 64 bits at both ends and travel modulo 2^39: at most `slots` apart from
// what the other end knows, so they are put back together exactly (widen()).
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>

namespace tutti::transport::ucx {

inline constexpr int kMaxRanks = 1 << 23;
inline constexpr int kCounterBits = 39;
inline constexpr uint64_t kCounterMask = (uint64_t{1} << kCounterBits) - 1;
inline constexpr ucp_tag_t kCreditKind = uint64_t{2} << 62;
inline constexpr ucp_tag_t kByeKind = uint64_t{1} << 62;
inline constexpr ucp_tag_t kGotKind = uint64_t{3} << 62;
// Matches any counter of one kind from one sender.
inline constexpr ucp_tag_t kAnyCounterMask = ~kCounterMask;
inline constexpr ucp_tag_t kExactMask = ~ucp_tag_t{0};

inline ucp_tag_t dataTag(int sender, uint64_t index) {
  return static_cast<uint64_t>(sender) << kCounterBits | (index & kCounterMask);
}

inline ucp_tag_t creditTag(int sender, uint64_t released) {
  return kCreditKind | dataTag(sender, released);
}

inline ucp_tag_t byeTag(int sender, uint64_t sent) {
  return kByeKind | dataTag(sender, sent);
}

inline ucp_tag_t gotTag(int sender, uint64_t arrived) {
  return kGotKind | dataTag(sender, arrived);
}

// The 64-bit counter whose low bits `tag` carries, given one not above it by more than 2^39 - 1.
inline uint64_t widen(uint64_t known, ucp_tag_t tag) {
  return known + ((tag - known) & kCounterMask);
}

}  // namespace tutti::transport::ucx
