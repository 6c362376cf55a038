// A rank's departure (transport.hpp) as a note in the header page of its own segment
// (segment.hpp), which every peer on the host maps: it outlives the rank's process, so a peer that
// finds the process gone still learns whether it left in good order or failed, and why.
//
// Layout, from kOffset in the page: the state word (u32, native order: read live through an
// atomic), then the record, little-endian (base/byte_codec.hpp): code (i32), collectives (u64),
// message (u32 length, bytes). The writer claims the state word (kNone -> kWriting) so that only
// the first departure is written, fills the record, then publishes the final state with a release
// store; a reader that acquires a final state sees the record. Readers trust nothing a peer wrote:
// an unknown state reads as none, and a record that does not decode leaves the reader's error as
// the message.
#pragma once

#include <cstddef>
#include <cstdint>

#include "transport/transport.hpp"

namespace tutti::transport::shm {

void writeDeparture(std::byte* headerPage, const Departure& departure);
Departure readDeparture(const std::byte* headerPage);

}  // namespace tutti::transport::shm
