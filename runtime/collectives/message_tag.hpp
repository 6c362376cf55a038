// The tag on every message an operation sends (transport::Tag): the signature of its call, all
// but the operation number, which differs between ranks that sent or received apart. A receiver
// compares it with its own call's before it takes a message, so that ranks in different calls
// (another collective, count, type, operation, root or algorithm, send/recv against a collective,
// or a call one rank skipped: the collective number differs) fail at the first message that
// crosses, naming both calls, instead of reducing each other's bytes into a result that looks
// right. The tag is exact, so the sender's call can be spelled out.
//
// Messages that carry signatures themselves (TUTTI_CHECK_CALLS, the direct algorithms' offers)
// are tagged as exchanges, which any exchange accepts: every rank then gets every signature and
// compares them all, so that each one names the mismatch, not just those that meet its messages.
#pragma once

#include "runtime/collectives/call_signature.hpp"
#include "transport/transport.hpp"

namespace tutti::runtime {

enum class Carries { kData, kSignatures };

transport::Tag tagOf(const CallSignature& call, Carries carries);
// The call a tag came from; its sequence number is 0 (not carried).
CallSignature callOf(const transport::Tag& tag);
// Whether an operation expecting `expected` takes a message tagged `got`.
bool accepts(const transport::Tag& expected, const transport::Tag& got);

}  // namespace tutti::runtime
