#include "transport/shm/departure_note.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "transport/shm/segment.hpp"

namespace tutti::transport::shm {
namespace {

constexpr size_t kOffset = 1024;  // past SegmentHeader
constexpr size_t kStateOffset = kOffset;
constexpr size_t kCodeOffset = kOffset + 4;
constexpr size_t kCollectivesOffset = kOffset + 8;
constexpr size_t kLengthOffset = kOffset + 16;
constexpr size_t kMessageOffset = kOffset + 24;
static_assert(sizeof(SegmentHeader) <= kOffset);
static_assert(kMessageOffset + Departure::kMaxMessageBytes <= SegmentHeader::kBytes);

constexpr uint32_t kWriting = 0xffffffff;  // claimed, fields not yet complete

std::atomic_ref<uint32_t> stateWord(const std::byte* page) {
  // The page is shared memory mapped read-write; readers only load through this reference.
  return std::atomic_ref<uint32_t>(
      *reinterpret_cast<uint32_t*>(const_cast<std::byte*>(page) + kStateOffset));
}

template <typename T>
void put(std::byte* page, size_t offset, T value) {
  std::memcpy(page + offset, &value, sizeof(value));
}

template <typename T>
T get(const std::byte* page, size_t offset) {
  T value;
  std::memcpy(&value, page + offset, sizeof(value));
  return value;
}

}  // namespace

void writeDeparture(std::byte* page, const Departure& departure) {
  uint32_t none = static_cast<uint32_t>(Departure::State::kNone);
  if (!stateWord(page).compare_exchange_strong(none, kWriting, std::memory_order_acq_rel)) return;
  const size_t length = std::min(departure.message.size(), Departure::kMaxMessageBytes);
  put(page, kCodeOffset, departure.code);
  put(page, kCollectivesOffset, departure.collectives);
  put(page, kLengthOffset, static_cast<uint32_t>(length));
  std::memcpy(page + kMessageOffset, departure.message.data(), length);
  stateWord(page).store(static_cast<uint32_t>(departure.state), std::memory_order_release);
}

Departure readDeparture(const std::byte* page) {
  const uint32_t state = stateWord(page).load(std::memory_order_acquire);
  Departure departure;
  if (state < static_cast<uint32_t>(Departure::State::kFinished) ||
      state > static_cast<uint32_t>(Departure::State::kAborted))
    return departure;
  departure.state = static_cast<Departure::State>(state);
  departure.code = get<int32_t>(page, kCodeOffset);
  departure.collectives = get<uint64_t>(page, kCollectivesOffset);
  const size_t length =
      std::min<size_t>(get<uint32_t>(page, kLengthOffset), Departure::kMaxMessageBytes);
  departure.message.assign(reinterpret_cast<const char*>(page + kMessageOffset), length);
  return departure;
}

}  // namespace tutti::transport::shm
