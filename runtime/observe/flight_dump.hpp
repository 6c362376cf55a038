// The flight recorder's dump: one JSON file per rank and communicator in TUTTI_DUMP_DIR, written
// when the communicator fails (timeout, abort, remote or system error) and on SIGUSR1. The format
// is in docs/flight-recorder.md; `tutti-info postmortem` merges the ranks' files.
#pragma once

#include <string>

namespace tutti::runtime {

class Communicator;

// The communicator's state and recorded operations as JSON; `reason` says why it was taken.
std::string flightRecordJson(const Communicator& comm, const std::string& reason);

// TUTTI_DUMP_DIR/tutti-<communicator>-rank<R>.json ("" when TUTTI_DUMP_DIR is unset).
std::string dumpPath(const Communicator& comm);

// Writes the dump (and flushes the trace, when TUTTI_TRACE_FILE is set); without TUTTI_DUMP_DIR
// it does nothing. Never throws: a failed write is a warning.
void dumpFlightRecord(const Communicator& comm, const std::string& reason);

}  // namespace tutti::runtime
