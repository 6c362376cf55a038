// A departure (transport.hpp) in the byte codec's form (base/byte_codec.hpp), shared by its two
// homes: the shm note in a segment's header page (shm/departure_note.hpp, state word apart) and
// the store's copy (runtime/peer_watch.cpp). Readers trust nothing a peer wrote.
#pragma once

#include <cstdint>

#include "base/byte_codec.hpp"
#include "transport/transport.hpp"

namespace tutti::transport {

// code (i32), collectives (u64), message (u32 length, at most Departure::kMaxMessageBytes).
void writeDepartureBody(ByteWriter& out, const Departure& departure);
// Fills `departure`'s code, collectives and message (not its state); throws as `in` does.
void readDepartureBody(ByteReader& in, Departure& departure);
// The state a stored word names: kNone for any value that is not a departure's.
Departure::State departureStateOf(uint32_t word);

}  // namespace tutti::transport
