// The tutti::Error a piece of code throws, for tests that check what an error says.
#pragma once

#include <catch2/catch.hpp>
#include <string>

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

// What the error `body` throws says; fails the test unless it has `code`.
template <typename Body>
std::string messageOf(ErrorCode code, Body&& body) {
  const Error error = errorOf(body);
  CHECK(error.code() == code);
  return error.what();
}

}  // namespace tutti::tests
