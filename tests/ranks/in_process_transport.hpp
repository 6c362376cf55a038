// A transport of the tests' own, registered with one line (transport::registerTransport) to show
// that the registry is the only place the runtime learns of transports: slot FIFOs in this
// process's memory behind a mutex, for ranks that are threads. A real transport of its own kind,
// not a stand-in for shm or tcp.
#pragma once

#include <cstdint>

namespace tutti::testing {

// Registers "in-process" (once per process; later calls do nothing).
void registerInProcessTransport();
// Registers "in-process-claims-memory": the same, but its kind says sharesMemory although its
// instances give no peer-memory access (a broken transport that init must refuse).
void registerMemoryClaimingTransport();
// Messages posted over it so far, by every rank of this process.
uint64_t inProcessMessages();

}  // namespace tutti::testing
