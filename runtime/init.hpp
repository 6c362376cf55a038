// The three ways a communicator is born: from a unique id, from the launcher's environment, or
// as a whole world of threads in this process.
#pragma once

#include <memory>
#include <vector>

#include "runtime/bootstrap/bootstrap.hpp"
#include "runtime/communicator.hpp"

namespace tutti::runtime {

std::unique_ptr<Communicator> initRank(const bootstrap::UniqueId& id, int rank, int nranks);
std::unique_ptr<Communicator> initFromEnv();
std::vector<std::unique_ptr<Communicator>> initAll(int nranks);

}  // namespace tutti::runtime
