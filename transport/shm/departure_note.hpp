// A rank's departure (transport.hpp) as a note in the header page of its own segment
// (segment.hpp), which every peer on the host maps: it outlives the rank's process, so a peer that
// finds the process gone still learns whether it left in good order or failed, and why.
//
// Layout, from kOffset in the page: state (u32), code (i32), collectives (u64), message length
// (u32), message bytes. The writer claims the state word (kNone -> kWriting) so that only the
// first departure is written, fills the fields, then publishes the final state with a release
// store; a reader that acquires a final state sees the fields. Readers trust nothing a peer wrote:
// an unknown state reads as none, the length is clamped.
#pragma once

#include <cstddef>
#include <cstdint>

#include "transport/transport.hpp"

namespace tutti::transport::shm {

void writeDeparture(std::byte* headerPage, const Departure& departure);
Departure readDeparture(const std::byte* headerPage);

}  // namespace tutti::transport::shm
