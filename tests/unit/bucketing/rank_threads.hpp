// tests/unit/bucketing/rank_threads.hpp: a thread world, one thread per rank. Catch2 v2
// assertions are not thread-safe, so ranks return what they saw and the main thread asserts.
#pragma once

#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "tutti/tutti.hpp"

namespace tutti::bucketing::testing {

// Runs body(comm, rank) on every rank; returns each rank's exception message ("" when none).
inline std::vector<std::string> onEveryRank(int nranks,
                                            const std::function<void(tuttiComm_t, int)>& body) {
  std::vector<Comm> comms = Comm::world(nranks);
  std::vector<std::string> errors(static_cast<size_t>(nranks));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < nranks; ++rank)
    threads.emplace_back([&, rank] {
      try {
        body(comms[static_cast<size_t>(rank)].handle(), rank);
      } catch (const std::exception& error) {
        errors[static_cast<size_t>(rank)] = error.what();
      }
    });
  for (std::thread& thread : threads) thread.join();
  return errors;
}

// Small integers derived from (seed, rank, index): exact in any summation order.
inline double seededValue(uint64_t seed, int rank, size_t index) {
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(rank) * 0xbf58476d1ce4e5b9ull +
               index * 0x94d049bb133111ebull;
  x ^= x >> 31;
  x *= 0xd6e9c5d7a4b3c1a5ull;
  x ^= x >> 29;
  return static_cast<double>(x % 17) - 8.0;
}

}  // namespace tutti::bucketing::testing
