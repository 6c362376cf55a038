// What every fuzz target shares: log messages are formatted (that code runs on hostile input too)
// but discarded, and a refusal is told apart from a bug.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "base/error.hpp"
#include "base/log.hpp"

namespace tutti::fuzz {

inline void discardLogs() {
  log::setLevel(log::Level::kTrace);
  log::setSink([](log::Level, const std::string&) {});
}

// Stops the run as a crash that libFuzzer reports with the input that caused it.
[[noreturn]] inline void bug(const std::string& what) {
  std::fprintf(stderr, "fuzz: %s\n", what.c_str());
  std::abort();
}

// Runs the parser; true when it accepted the input, false when it refused it with an Error of
// the `refusal` code (the documented way to say no). Any other exception is a bug.
template <typename Parse>
bool accepts(ErrorCode refusal, Parse&& parse) {
  try {
    parse();
    return true;
  } catch (const Error& error) {
    if (error.code() == refusal) return false;
    bug("refused with error code " + std::to_string(static_cast<int>(error.code())) + ": " +
        error.what());
  } catch (const std::exception& error) {
    bug(std::string("escaped exception: ") + error.what());
  }
}

}  // namespace tutti::fuzz
