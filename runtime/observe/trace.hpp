// TUTTI_TRACE_FILE: a Chrome/Perfetto trace (JSON object format) of one communicator, one complete
// event ("ph":"X") per operation with its algorithm, bytes and sequence number, so that overlap
// and stragglers can be seen. Written when the communicator is destroyed and with every dump.
//
// It is drawn from the flight recorder, so memory stays bounded: a trace holds the last
// TUTTI_FLIGHT_RECORDER_ENTRIES operations, and says in otherData how many earlier ones were
// overwritten ("dropped_operations").
#pragma once

#include <string>

namespace tutti::runtime {

class Communicator;

// The file for this communicator: %r is the rank, %h the host, %p the pid. A pattern without %r
// gets ".rank<R>" before its extension, and a communicator split from the world gets its own id
// there too, so ranks and communicators never share a file.
std::string tracePath(const std::string& pattern, int rank, const std::string& communicator,
                      bool isWorld);

std::string traceJson(const Communicator& comm);

// Writes the trace when TUTTI_TRACE_FILE is set. Never throws: a failed write is a warning.
void writeTrace(const Communicator& comm);

}  // namespace tutti::runtime
