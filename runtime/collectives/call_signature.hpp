// What a rank says of a collective call to the others, so that they can tell it is the same call:
// TUTTI_CHECK_CALLS sends it before every collective (call_check.hpp), the direct algorithms in
// their offers (direct_rounds.hpp). Plain integers, no padding: it crosses processes as bytes.
#pragma once

#include <cstdint>

namespace tutti::runtime {

struct CallSignature {
  uint32_t collective;  // Collective
  uint32_t dtype;
  uint32_t op;
  int32_t root;
  uint64_t count;
  uint64_t sequence;   // the communicator's operation number, send/recv included: for messages
  uint64_t ordinal;    // its collectives' number (Communicator::nextCollective): compared
  uint64_t algorithm;  // its index in algorithms()

  // All but the sequence number, which differs between ranks that sent or received apart.
  bool operator==(const CallSignature& other) const;
};

// Throws kInvalidUsage naming both calls (and, when only the algorithm differs, both algorithms)
// unless rank `peer`'s call `theirs` is the same as this rank's `mine`.
void requireSameCall(int self, const CallSignature& mine, int peer, const CallSignature& theirs);

}  // namespace tutti::runtime
