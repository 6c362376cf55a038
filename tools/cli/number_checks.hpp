// Checks for CLI11 options that take a real number. CLI11's own (Range, NonNegativeNumber,
// PositiveNumber) let NaN through, since every comparison with it is false: a NaN threshold
// turned a health check off and a NaN timeout ran without one. And a number of seconds past about
// 9.2e9 overflows a clock's nanoseconds: tuttirun's --grace 1e10 sent SIGTERM at once.
#pragma once

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <limits>
#include <string>

#include "tools/cli/seconds.hpp"

namespace tutti::cli {

// A finite number in [min, max]; `what` names the range in the help and the error.
inline CLI::Validator finiteIn(double min, double max, const std::string& what) {
  return CLI::Validator(
      [min, max, what](std::string& text) {
        double value = 0;
        if (CLI::detail::lexical_cast(text, value) && std::isfinite(value) && value >= min &&
            value <= max)
          return std::string();
        return fmt::format("{} is not {}", text, what);
      },
      what);
}

inline CLI::Validator finiteIn(double min, double max) {
  return finiteIn(min, max, fmt::format("a number in [{}, {}]", min, max));
}

inline CLI::Validator nonNegative() {
  return finiteIn(0, std::numeric_limits<double>::max(), "a finite number >= 0");
}

// Seconds to wait: 0 up to kMaxSeconds.
inline CLI::Validator seconds() {
  return finiteIn(0, kMaxSeconds, fmt::format("seconds in [0, {:g}]", kMaxSeconds));
}

}  // namespace tutti::cli
