// What a job's ranks leave in /dev/shm when they are killed before every peer mapped their
// segments (the runtime unlinks each name once all have, so later deaths leave nothing): the
// launcher finds the job's names by the prefix its secret gives them (segmentNamePrefix in
// base/auth.hpp) and removes them once every rank has ended.
#pragma once

#include <string>
#include <vector>

namespace tutti::launch::detail {

// Unlinks every entry of /dev/shm whose name begins with `prefix`; returns the names unlinked.
std::vector<std::string> removeSharedMemory(const std::string& prefix);

}  // namespace tutti::launch::detail
