// Test-only fault switch: TUTTI_BENCH_FAULT=RANK:INDEX flips every bit of element INDEX of rank
// RANK's receive buffer after each checked call, before the check counts it, so that tests can
// see -c catch a wrong result. Never set it for a real measurement.
#pragma once

#include <cstddef>

namespace tutti::bench {

struct Fault {
  int rank = -1;  // -1: none
  size_t index = 0;

  static Fault fromEnv();  // throws std::runtime_error when the variable is malformed
  // On `rank`, flips the element if the buffer of `count` elements of `unit` bytes holds it.
  void apply(int rank, unsigned char* buffer, size_t count, size_t unit) const;
};

}  // namespace tutti::bench
