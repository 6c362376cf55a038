// What a job's ranks leave in /dev/shm when they are killed before every peer mapped their
// segments (the runtime unlinks each name once all have, so later deaths leave nothing): names
// found by their prefix (segmentNamePrefix in base/auth.hpp, then the communicator's tag and the
// rank). The launcher removes the job's once every rank has ended; the survivors of a
// communicator's init remove a dead member's as soon as they find it gone.
#pragma once

#include <string>
#include <vector>

namespace tutti {

// Unlinks every entry of /dev/shm whose name begins with `prefix`; returns the names unlinked.
std::vector<std::string> removeSharedMemory(const std::string& prefix);

}  // namespace tutti
