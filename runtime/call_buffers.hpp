// The bytes a collective call reads and writes on one rank, from its validated arguments.
#pragma once

#include "runtime/operations.hpp"
#include "runtime/staged_buffers.hpp"

namespace tutti::runtime {

BufferUse bufferUse(const CollectiveCall& call, int nranks, int rank);

}  // namespace tutti::runtime
