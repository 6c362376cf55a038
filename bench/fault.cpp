#include "bench/fault.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace tutti::bench {

Fault Fault::fromEnv() {
  Fault fault;
  const char* text = std::getenv("TUTTI_BENCH_FAULT");
  unsigned long index = 0;
  if (text && std::sscanf(text, "%d:%lu", &fault.rank, &index) != 2) {
    throw std::runtime_error(fmt::format("TUTTI_BENCH_FAULT={}: not RANK:INDEX", text));
  }
  fault.index = index;
  return fault;
}

void Fault::apply(int rankHere, unsigned char* buffer, size_t count, size_t unit) const {
  if (rankHere != rank || index >= count) return;
  for (size_t b = 0; b < unit; ++b) buffer[index * unit + b] ^= 0xff;
}

}  // namespace tutti::bench
