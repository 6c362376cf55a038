// Runs an operation's body so that the flight recorder sees it end, done or failed.
#pragma once

#include <exception>
#include <utility>

#include "base/error.hpp"
#include "runtime/communicator.hpp"

namespace tutti::runtime {

template <typename Body>
void recorded(Communicator& comm, uint64_t sequence, Body&& body) {
  try {
    body();
  } catch (const Error& error) {
    comm.recorder().failed(sequence, error);
    throw;
  } catch (const std::exception& error) {
    comm.recorder().failed(sequence, Error(ErrorCode::kInternal, error.what()));
    throw;
  }
  comm.recorder().finished(sequence);
}

}  // namespace tutti::runtime
