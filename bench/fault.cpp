#include "bench/fault.hpp"

#include <cstdio>

namespace tutti::bench {

std::optional<Fault> Fault::parse(const std::string& text) {
  Fault fault;
  unsigned long index = 0;
  int used = 0;
  if (std::sscanf(text.c_str(), "%d:%lu%n", &fault.rank, &index, &used) != 2 ||
      static_cast<size_t>(used) != text.size() || fault.rank < 0 || text.find('-') != text.npos)
    return std::nullopt;
  fault.index = index;
  return fault;
}

void Fault::apply(int rankHere, unsigned char* buffer, size_t count, size_t unit) const {
  if (rankHere != rank || index >= count) return;
  for (size_t b = 0; b < unit; ++b) buffer[index * unit + b] ^= 0xff;
}

}  // namespace tutti::bench
