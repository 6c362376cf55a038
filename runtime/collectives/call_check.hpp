// TUTTI_CHECK_CALLS=1: before a collective moves any data, every rank sends the signature of its
// call (collective, count, type, operation, root, the number of collectives before it, and the
// algorithm it picked: tutti_comm_set_algorithm is per rank) to every other rank and compares. A
// mismatch fails the operation on every rank with both calls spelled out, instead of corrupting
// buffers or hanging. The signature travels as the operation's first message on each connection, so
// the streams stay aligned as long as every rank checks; tagged as an exchange (message_tag.hpp),
// it reaches every rank whatever the calls, so that each rank names the mismatch.
#pragma once

#include "runtime/collectives/op_context.hpp"

namespace tutti::runtime {

// Throws kInvalidUsage naming this rank's call (ctx.call) and the first rank whose call differs.
void checkSameCall(OpContext& ctx);

}  // namespace tutti::runtime
