// SIGUSR1 dumps the flight recorder of every live communicator of the process into
// TUTTI_DUMP_DIR, so that a hung job can be asked where it is. The handler is installed only when
// TUTTI_DUMP_DIR is set. It is async-signal-safe: it writes one byte to a pipe (no allocation, no
// lock) and a dump thread, started with it, does the work.
#pragma once

namespace tutti::runtime {

class Communicator;

// Called by a connected communicator (with TUTTI_DUMP_DIR set) and by its destructor.
void watchForDumpSignal(Communicator* comm);
void stopWatching(Communicator* comm);

}  // namespace tutti::runtime
