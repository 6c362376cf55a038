// The departure note in a segment's header page (transport/shm/departure_note.hpp), on a page in
// this process: what is written reads back, only the first departure counts, a long message is
// cut to the bound, and what a peer wrote wrongly (an unknown state, a length over the bound,
// assembled here by hand at the layout's offsets) is not trusted.
#include "transport/shm/departure_note.hpp"

#include <array>
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/error.hpp"
#include "transport/shm/segment.hpp"

namespace tutti::transport::test {
namespace {

using State = Departure::State;

constexpr size_t kStateAt = 1024;                // the state word
constexpr size_t kLengthAt = kStateAt + 4 + 12;  // past the state, code (i32), collectives (u64)

struct Page {
  alignas(64) std::array<std::byte, shm::SegmentHeader::kBytes> bytes{};
  std::byte* data() { return bytes.data(); }

  void putLittle(size_t at, uint64_t value, size_t width) {
    for (size_t i = 0; i < width; ++i) bytes[at + i] = static_cast<std::byte>(value >> (8 * i));
  }
};

}  // namespace

TEST_CASE("departure note: the first departure reads back", "[transport][shm]") {
  Page page;
  CHECK(shm::readDeparture(page.data()).state == State::kNone);
  shm::writeDeparture(page.data(), {State::kFailed, 4, 17, "rank 2 gave up"});
  shm::writeDeparture(page.data(), {State::kFinished, 0, 18, ""});  // too late: ignored
  const Departure got = shm::readDeparture(page.data());
  CHECK(got.state == State::kFailed);
  CHECK(got.code == 4);
  CHECK(got.collectives == 17);
  CHECK(got.message == "rank 2 gave up");
}

TEST_CASE("departure note: a long message is cut to the bound", "[transport][shm]") {
  Page page;
  const std::string message(Departure::kMaxMessageBytes + 100, 'm');
  shm::writeDeparture(page.data(), {State::kAborted, -1, 3, message});
  const Departure got = shm::readDeparture(page.data());
  CHECK(got.state == State::kAborted);
  CHECK(got.code == -1);
  CHECK(got.message == message.substr(0, Departure::kMaxMessageBytes));
}

TEST_CASE("departure note: what a peer wrote wrongly is not trusted", "[transport][shm]") {
  Page page;
  shm::writeDeparture(page.data(), {State::kFailed, 4, 17, "why"});
  SECTION("an unknown state reads as none") {
    page.putLittle(kStateAt, 9, 4);
    const Departure got = shm::readDeparture(page.data());
    CHECK(got.state == State::kNone);
    CHECK(got.message.empty());
  }
  SECTION("a message length over the bound is named, nothing is read past it") {
    page.putLittle(kLengthAt, Departure::kMaxMessageBytes + 1, 4);
    const Departure got = shm::readDeparture(page.data());
    CHECK(got.state == State::kFailed);
    CHECK(got.message ==
          fmt::format("a departure note: a string of {} bytes at offset 12, over the limit of {}",
                      Departure::kMaxMessageBytes + 1, Departure::kMaxMessageBytes));
  }
}

}  // namespace tutti::transport::test
