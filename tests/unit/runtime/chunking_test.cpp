// The chunk arithmetic every algorithm shares (runtime/collectives/chunking.hpp), checked as
// properties over many random (count, parts, slot size) with a fixed seed: the chunks cover the
// buffer exactly once and in order, each fits a slot, every section but the last is full, and
// empty chunks come only at the end of the last section; evenSplit's ranges differ by one at most.
#include "runtime/collectives/chunking.hpp"

#include <catch2/catch.hpp>
#include <cstdint>
#include <random>

using namespace tutti::runtime;

namespace {

constexpr uint64_t kSeed = 20261201;

size_t below(std::mt19937_64& rng, size_t bound) {
  return static_cast<size_t>(rng() % bound);
}

// Walks every chunk of `sections` in order; returns "" when the properties hold, else what broke.
std::string walk(size_t count, size_t parts, size_t slotElems) {
  const Sections sections(count, parts, slotElems);
  const size_t sectionElems = parts * slotElems;
  if (sections.size() != (count + sectionElems - 1) / sectionElems) return "number of sections";
  size_t next = 0;
  for (size_t section = 0; section < sections.size(); ++section) {
    const bool last = section + 1 == sections.size();
    bool emptySeen = false;
    for (size_t part = 0; part < parts; ++part) {
      const Range chunk = sections.chunk(section, part);
      if (chunk.offset != next) return "a gap or an overlap";
      if (chunk.count > slotElems) return "a chunk larger than a slot";
      if (!last && chunk.count != slotElems) return "a section before the last not full";
      if (chunk.count == 0) emptySeen = true;
      if (chunk.count > 0 && emptySeen) return "an empty chunk before a full one";
      next += chunk.count;
    }
  }
  return next == count ? "" : "chunks do not end at count";
}

}  // namespace

TEST_CASE("sections cover the buffer once, in order, in chunks that fit a slot") {
  std::mt19937_64 rng(kSeed);
  for (int trial = 0; trial < 3000; ++trial) {
    // Small counts often (fewer elements than parts), up to a few sections of large slots.
    const size_t count = trial % 4 == 0 ? below(rng, 70) : below(rng, size_t{1} << 15);
    const size_t parts = 1 + below(rng, 64);
    const size_t slotElems = trial % 8 == 0 ? 1 : 1 + below(rng, 4096);
    INFO("seed " << kSeed << " trial " << trial << ": count " << count << ", parts " << parts
                 << ", slot " << slotElems);
    REQUIRE(walk(count, parts, slotElems).empty());
  }
  // Counts beyond 32 bits, as 64-bit buffers of large tensors have.
  CHECK(walk((size_t{1} << 36) + 12345, 8, size_t{1} << 20).empty());
}

TEST_CASE("a count of 0 has no sections; a count of 1 one chunk of 1") {
  CHECK(Sections(0, 4, 128).size() == 0);
  const Sections one(1, 4, 128);
  REQUIRE(one.size() == 1);
  CHECK(one.chunk(0, 0).count == 1);
  for (size_t part = 1; part < 4; ++part) CHECK(one.chunk(0, part).count == 0);
}

TEST_CASE("evenSplit's ranges cover the count once, in order, the first ones one larger") {
  std::mt19937_64 rng(kSeed + 1);
  for (int trial = 0; trial < 3000; ++trial) {
    const size_t count = trial % 3 == 0 ? below(rng, 100) : below(rng, size_t{1} << 40);
    const size_t parts = 1 + below(rng, 128);
    INFO("seed " << kSeed + 1 << " trial " << trial << ": count " << count << ", parts " << parts);
    size_t next = 0;
    for (size_t index = 0; index < parts; ++index) {
      const Range range = evenSplit(count, parts, index);
      REQUIRE(range.offset == next);
      // count / parts or one more, the larger ones first; empty only when count < parts.
      REQUIRE(range.count == count / parts + (index < count % parts ? 1 : 0));
      REQUIRE((range.count > 0 || count < parts));
      next += range.count;
    }
    REQUIRE(next == count);
  }
}

TEST_CASE("modRank wraps negative and large values into 0..n-1") {
  for (int n = 1; n <= 17; ++n)
    for (long value = -3L * n; value <= 3L * n; ++value) {
      const int rank = modRank(value, n);
      REQUIRE(rank >= 0);
      REQUIRE(rank < n);
      REQUIRE((value - rank) % n == 0);
    }
}
