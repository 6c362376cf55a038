// A send's source in a point-to-point batch: a receive about to overwrite bytes the send has not
// sent has them saved first, once, and the send still reads what the buffer held when the batch
// began; bytes already sent or outside the send are never copied.
#include "runtime/collectives/send_source.hpp"

#include <catch2/catch.hpp>
#include <cstring>
#include <numeric>
#include <vector>

using tutti::runtime::SendSource;

namespace {

std::vector<char> pattern(size_t bytes) {
  std::vector<char> data(bytes);
  std::iota(data.begin(), data.end(), char{1});
  return data;
}

std::vector<char> sentBytes(const SendSource& source, size_t offset, size_t bytes) {
  std::vector<char> out(bytes);
  source.copyOut(out.data(), offset, bytes);
  return out;
}

}  // namespace

TEST_CASE("bytes overwritten before they were sent are sent as they were") {
  std::vector<char> buffer = pattern(100);
  const std::vector<char> original = buffer;
  SendSource source(buffer.data() + 10, 80);  // sends buffer[10, 90)
  CHECK(source.overlaps(buffer.data(), 20));
  CHECK_FALSE(source.overlaps(buffer.data(), 10));
  CHECK_FALSE(source.overlaps(buffer.data() + 90, 10));

  // Writing [40, 60) while 5 bytes are sent: send offsets [30, 50) are lost unless saved.
  CHECK(source.wouldLose(buffer.data() + 40, 20, 5));
  source.saveBefore(buffer.data() + 40, 20, 5);
  std::memset(buffer.data() + 40, 0, 20);
  CHECK_FALSE(source.wouldLose(buffer.data() + 40, 20, 5));
  CHECK(sentBytes(source, 0, 80) ==
        std::vector<char>(original.begin() + 10, original.begin() + 90));

  // Overlapping the saved range again: its bytes are not saved a second time (the buffer holds
  // zeros there now), the rest of [50, 70) is.
  CHECK(source.wouldLose(buffer.data() + 50, 20, 5));
  source.saveBefore(buffer.data() + 50, 20, 5);
  std::memset(buffer.data() + 50, 0, 20);
  CHECK(sentBytes(source, 0, 80) ==
        std::vector<char>(original.begin() + 10, original.begin() + 90));
  CHECK(sentBytes(source, 35, 10) ==
        std::vector<char>(original.begin() + 45, original.begin() + 55));
}

TEST_CASE("bytes already sent, or outside the send, need no saving") {
  std::vector<char> buffer = pattern(64);
  SendSource source(buffer.data() + 16, 32);                  // buffer[16, 48)
  CHECK_FALSE(source.wouldLose(buffer.data() + 16, 16, 16));  // sent already
  CHECK_FALSE(source.wouldLose(buffer.data(), 16, 0));        // before it
  CHECK_FALSE(source.wouldLose(buffer.data() + 48, 16, 0));   // after it
  CHECK(source.wouldLose(buffer.data() + 16, 17, 16));        // one byte not sent
  CHECK_FALSE(source.wouldLose(buffer.data(), 64, 32));       // all sent
}

TEST_CASE("a send to this rank itself copies out into its own buffer, shifted") {
  std::vector<char> buffer = pattern(48);
  const std::vector<char> original = buffer;
  SendSource source(buffer.data(), 32);
  // Received into buffer[8, 40): saved where it lands on the send, then copied out.
  source.saveBefore(buffer.data() + 8, 32, 0);
  source.copyOut(buffer.data() + 8, 0, 32);
  CHECK(std::vector<char>(buffer.begin() + 8, buffer.begin() + 40) ==
        std::vector<char>(original.begin(), original.begin() + 32));
}
