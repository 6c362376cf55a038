// The WARN lines a test case has logged, as the one listener in tests/catch_main.cpp collects
// them for every test case of every binary. A test case that logs a warning fails, unless it
// declares with expect() that it provokes warnings on purpose (and checks them itself).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace tutti::tests {

class Warnings {
 public:
  // This test case (this run of its sections) logs warnings on purpose: they do not fail it.
  void expect();
  // The warnings so far, oldest first.
  std::vector<std::string> all() const;
  // How many contain every one of `parts`.
  size_t count(const std::vector<std::string>& parts) const;
  bool contains(const std::string& text) const { return count({text}) > 0; }
  // Waits up to `span` for one that contains every one of `parts` (one logged by another thread).
  bool waitFor(const std::vector<std::string>& parts, std::chrono::milliseconds span) const;
};

}  // namespace tutti::tests
