// tcp's staging slots: which frame holds which slot.
#include "transport/tcp/slot_pool.hpp"

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <random>
#include <string>

#include "base/error.hpp"

namespace tutti::transport::tcp {
namespace {

constexpr size_t kSlots = 5;
constexpr size_t kSlotBytes = 100;  // not a multiple of the alignment

}  // namespace

TEST_CASE("slot pool: a frame keeps its slot; the slot freed last is taken next",
          "[transport][tcp]") {
  SlotPool pool(kSlots, kSlotBytes);
  std::byte* a = pool.claim(0);
  CHECK(pool.claim(0) == a);
  CHECK(reinterpret_cast<uintptr_t>(a) % 64 == 0);
  std::byte* b = pool.claim(1);
  CHECK(b != a);
  pool.free(0);
  CHECK(pool.claim(2) == a);  // frame 0's slot, warm
  pool.free(1);
  pool.free(2);
  CHECK(pool.claim(3) == a);
  pool.free(4);  // never claimed: nothing to free
  CHECK(pool.claim(4) == b);
}

TEST_CASE(
    "slot pool: frames held at once never share memory; a frame beyond the window is an "
    "internal error",
    "[transport][tcp]") {
  SlotPool pool(kSlots, kSlotBytes);
  std::mt19937_64 random(20261204);
  // A window of frames as a link holds them: claimed in order, freed oldest first, each filled
  // with its own number and checked when freed.
  std::deque<uint64_t> held;
  uint64_t next = 0;
  auto fill = [](uint64_t frame) { return static_cast<std::byte>(frame * 37 + 11); };
  for (int step = 0; step < 10000; ++step) {
    const bool claim = held.empty() || (held.size() < kSlots && random() % 2 == 0);
    if (claim) {
      std::memset(pool.claim(next), static_cast<int>(fill(next)), kSlotBytes);
      held.push_back(next++);
      continue;
    }
    const uint64_t oldest = held.front();
    const std::byte* data = pool.claim(oldest);
    for (size_t i = 0; i < kSlotBytes; ++i) REQUIRE(data[i] == fill(oldest));
    pool.free(oldest);
    held.pop_front();
  }
  while (held.size() < kSlots) pool.claim(next), held.push_back(next++);
  try {
    pool.claim(next);
    FAIL("a frame " + std::to_string(kSlots) + " past a held one got a slot");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::kInternal);
  }
}

}  // namespace tutti::transport::tcp
