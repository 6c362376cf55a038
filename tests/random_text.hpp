// Random strings for the tests of byte forms: any bytes, newlines and NULs included.
#pragma once

#include <cstddef>
#include <random>
#include <string>

namespace tutti::tests {

// 0 to maxBytes bytes, each any value.
inline std::string randomText(std::mt19937_64& rng, size_t maxBytes) {
  std::string text(rng() % (maxBytes + 1), '\0');
  for (char& c : text) c = static_cast<char>(rng());
  return text;
}

}  // namespace tutti::tests
