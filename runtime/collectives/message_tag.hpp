// The tag on every message an operation sends (transport::Tag): the signature of its call, all
// but the operation number, which differs between ranks that sent or received apart. A receiver
// compares it with its own call's before it takes a message, so that ranks in different calls
// (another collective, count, type, operation, root or algorithm, send/recv against a collective,
// the next call of a rank that skipped one) fail at the first message that crosses, naming both
// calls, instead of reducing each other's bytes into a result that looks right. The tag is
// exact, so the sender's call can be spelled out. A skipped call followed by one alike cannot be
// told apart: it is that rank's call of that number.
//
// Messages that carry signatures themselves (TUTTI_CHECK_CALLS, the direct algorithms' offers)
// are tagged as exchanges, which any exchange accepts: every rank then gets every signature and
// compares them all, so that each one names the mismatch, not just those that meet its messages.
#pragma once

#include <cstdint>

#include "runtime/collectives/call_signature.hpp"
#include "transport/transport.hpp"

namespace tutti::runtime {

enum class Carries { kData, kSignatures };

namespace tag_layout {
// words[2]: the small fields side by side. Collective, type, operation and algorithm indices stay
// far below 128, so nothing is lost and the top bit of the algorithm's byte marks exchanges.
inline constexpr int kDtypeShift = 8, kOpShift = 16, kAlgorithmShift = 24, kRootShift = 32;
inline constexpr uint64_t kByte = 0xff, kAlgorithmBits = 0x7f;
inline constexpr uint64_t kSignatures = uint64_t{0x80} << kAlgorithmShift;
}  // namespace tag_layout

// Inline: it runs twice per message on the latency path.
inline transport::Tag tagOf(const CallSignature& call, Carries carries) {
  using namespace tag_layout;
  const uint64_t packed = (call.collective & kByte) | (call.dtype & kByte) << kDtypeShift |
                          (call.op & kByte) << kOpShift |
                          (call.algorithm & kAlgorithmBits) << kAlgorithmShift |
                          uint64_t{static_cast<uint32_t>(call.root)} << kRootShift |
                          (carries == Carries::kSignatures ? kSignatures : 0);
  return {{call.count, call.ordinal, packed}};
}

// The call a tag came from; its sequence number is 0 (not carried).
CallSignature callOf(const transport::Tag& tag);

// Whether an operation expecting `expected` takes a message tagged `got`.
inline bool accepts(const transport::Tag& expected, const transport::Tag& got) {
  return got == expected || (expected.words[2] & got.words[2] & tag_layout::kSignatures) != 0;
}

}  // namespace tutti::runtime
