#include "transport/shm/departure_note.hpp"

#include <atomic>

#include "transport/detail/departure_record.hpp"
#include "transport/shm/segment.hpp"

namespace tutti::transport::shm {
namespace {

constexpr size_t kOffset = 1024;               // past the segment header
constexpr size_t kRecordOffset = kOffset + 4;  // past the state word
static_assert(SegmentHeader::kEncodedBytes <= kOffset);
constexpr size_t kRecordBytes = SegmentHeader::kBytes - kRecordOffset;
static_assert(4 + 8 + 4 + Departure::kMaxMessageBytes <= kRecordBytes);

constexpr uint32_t kWriting = 0xffffffff;  // claimed, record not yet complete

std::atomic_ref<uint32_t> stateWord(const std::byte* page) {
  // The page is shared memory mapped read-write; readers only load through this reference.
  return std::atomic_ref<uint32_t>(
      *reinterpret_cast<uint32_t*>(const_cast<std::byte*>(page) + kOffset));
}

}  // namespace

void writeDeparture(std::byte* page, const Departure& departure) {
  uint32_t none = static_cast<uint32_t>(Departure::State::kNone);
  if (!stateWord(page).compare_exchange_strong(none, kWriting, std::memory_order_acq_rel)) return;
  ByteWriter out(std::span(page + kRecordOffset, kRecordBytes));
  writeDepartureBody(out, departure);
  stateWord(page).store(static_cast<uint32_t>(departure.state), std::memory_order_release);
}

Departure readDeparture(const std::byte* page) {
  Departure departure;
  departure.state = departureStateOf(stateWord(page).load(std::memory_order_acquire));
  if (departure.state == Departure::State::kNone) return departure;
  // The record is followed by the rest of the page, not by more of the note: no end() check.
  ByteReader in(std::span(page + kRecordOffset, kRecordBytes), ErrorCode::kRemote,
                "a departure note");
  try {
    readDepartureBody(in, departure);
  } catch (const Error& error) {
    departure.message = error.what();
  }
  return departure;
}

}  // namespace tutti::transport::shm
