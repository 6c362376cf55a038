// The ways a communicator is born: from a unique id, from the launcher's environment, as a whole
// world of threads in this process, or as a newcomer to a communicator that grows.
#pragma once

#include <memory>
#include <vector>

#include "runtime/bootstrap/bootstrap.hpp"
#include "runtime/communicator.hpp"

namespace tutti::runtime {

std::unique_ptr<Communicator> initRank(const bootstrap::UniqueId& id, int rank, int nranks);
std::unique_ptr<Communicator> initFromEnv();
std::vector<std::unique_ptr<Communicator>> initAll(int nranks);
// A newcomer's side of tutti_comm_grow: `id` is a grow token (Communicator::growId), `rank` one
// of the ranks the members leave to newcomers (their size .. newSize-1).
std::unique_ptr<Communicator> initGrowing(const bootstrap::UniqueId& id, int rank, int newSize);

}  // namespace tutti::runtime
