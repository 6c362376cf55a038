// What a rank says of a call to the others, so that they can tell it is the same call: every
// message carries it as its tag (message_tag.hpp), TUTTI_CHECK_CALLS sends it in full before every
// collective (call_check.hpp), the direct algorithms in their offers (direct_offer.hpp). It
// crosses processes as the kCallSignatureBytes that writeCall lays out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/byte_codec.hpp"

namespace tutti::runtime {

// CallSignature::collective of the calls that are not a Collective.
inline constexpr uint32_t kBarrierCall = 64;
inline constexpr uint32_t kPointToPointCall = 65;  // send/recv: no other field is set

struct CallSignature {
  uint32_t collective = 0;  // Collective, kBarrierCall or kPointToPointCall
  uint32_t dtype = 0;
  uint32_t op = 0;
  int32_t root = 0;
  uint64_t count = 0;
  uint64_t sequence = 0;   // the communicator's operation number, send/recv included: for messages
  uint64_t ordinal = 0;    // its collectives' number (OperationCounts::nextCollective): compared
  uint64_t algorithm = 0;  // its index in algorithms()

  // All but the sequence number, which differs between ranks that sent or received apart.
  bool operator==(const CallSignature& other) const;
};

// Every field, sequence number included: u32 collective, dtype, op; i32 root; u64 count, sequence,
// ordinal, algorithm. Any values decode; what they mean is the comparison's business.
inline constexpr size_t kCallSignatureBytes = 4 * 4 + 4 * 8;
void writeCall(ByteWriter& out, const CallSignature& call);
CallSignature readCall(ByteReader& in);

// "rank 0 called allreduce(count=1024, float32, sum) as call #17; rank 3 called ...", or, when
// only the algorithm differs, both algorithms. A sequence number of 0 is not known (a message's
// tag does not carry it): that call is named by its collective number alone.
std::string differentCalls(int self, const CallSignature& mine, int peer,
                           const CallSignature& theirs);

// Throws kInvalidUsage naming both calls unless rank `peer`'s call `theirs` is the same as this
// rank's `mine`.
void requireSameCall(int self, const CallSignature& mine, int peer, const CallSignature& theirs);

}  // namespace tutti::runtime
