// The most seconds a command-line limit takes: far below where a duration's nanoseconds overflow
// (about 9.2e9 s), and about three years.
#pragma once

namespace tutti::cli {

constexpr double kMaxSeconds = 1e8;

}  // namespace tutti::cli
