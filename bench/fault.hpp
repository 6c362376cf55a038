// Test-only fault switch: --fault RANK:INDEX (an option --help leaves out) flips every bit of
// element INDEX of rank RANK's receive buffer after each checked call, before the check counts
// it, so that tests can see -c catch a wrong result. Never give it for a real measurement.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace tutti::bench {

struct Fault {
  int rank = -1;  // -1: none
  size_t index = 0;

  // "RANK:INDEX", both numbers >= 0; nullopt when malformed.
  static std::optional<Fault> parse(const std::string& text);
  // On `rank`, flips the element if the buffer of `count` elements of `unit` bytes holds it.
  void apply(int rank, unsigned char* buffer, size_t count, size_t unit) const;
};

}  // namespace tutti::bench
