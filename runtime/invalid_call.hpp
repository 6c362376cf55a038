// The one shape of an invalid argument's message: rank, operation, its sequence number, problem.
#pragma once

#include <string>

#include "base/error.hpp"
#include "runtime/communicator.hpp"

namespace tutti::runtime {

[[noreturn]] inline void invalidCall(const Communicator& comm, const char* what,
                                     const std::string& problem) {
  raise(ErrorCode::kInvalidArgument, "rank {}: {} #{}: {}", comm.rank(), what,
        comm.counts().lastSequence() + 1, problem);
}

}  // namespace tutti::runtime
