// TUTTI_CHECK_CALLS=1: before a collective moves any data, every rank sends the signature of its
// call (collective, count, type, operation, root, the number of collectives before it, and the
// algorithm it picked: tutti_comm_set_algorithm is per rank) to every other rank and compares. A
// mismatch fails the operation on every rank with both calls spelled out, instead of corrupting
// buffers or hanging. The signature travels as the operation's first message on each connection, so
// the streams stay aligned as long as every rank checks.
#pragma once

#include <cstdint>

#include "runtime/collectives/algorithm.hpp"

namespace tutti::runtime {

struct CallSignature {
  uint32_t collective;
  uint32_t dtype;
  uint32_t op;
  int32_t root;
  uint64_t count;
  uint64_t sequence;   // the communicator's operation number, send/recv included: for messages
  uint64_t ordinal;    // its collectives' number (Communicator::nextCollective): compared
  uint64_t algorithm;  // its index in algorithms(); 64 bits, so that no padding travels

  // All but the sequence number, which differs between ranks that sent or received apart.
  bool operator==(const CallSignature& other) const;
};

// Throws kInvalidUsage naming this rank's call and the first rank whose call differs.
void checkSameCall(OpContext& ctx, const CallSignature& mine);

}  // namespace tutti::runtime
