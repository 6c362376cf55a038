// The tutti::Error a piece of code throws, for tests that check what an error says.
#pragma once

#include <catch2/catch.hpp>

#include "base/error.hpp"

namespace tutti::tests {

// Runs `body` and returns the Error it threw (fails the test when it throws nothing).
template <typename Body>
Error errorOf(Body&& body) {
  try {
    body();
  } catch (const Error& error) {
    return error;
  }
  FAIL("no tutti::Error was thrown");
  return Error(ErrorCode::kInternal, "unreachable");
}

}  // namespace tutti::tests
