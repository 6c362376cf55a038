#include "runtime/collectives/send_source.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace tutti::runtime {

bool SendSource::overlaps(const void* begin, size_t bytes) const {
  const auto from = reinterpret_cast<uintptr_t>(begin), mine = reinterpret_cast<uintptr_t>(data_);
  return bytes > 0 && bytes_ > 0 && from < mine + bytes_ && mine < from + bytes;
}

// The send's offsets [low, high) that writing [begin, begin + bytes) reaches from `sent` on.
std::pair<size_t, size_t> SendSource::unsentIn(const void* begin, size_t bytes, size_t sent) const {
  const auto from = reinterpret_cast<uintptr_t>(begin), mine = reinterpret_cast<uintptr_t>(data_);
  const uintptr_t first = std::max(from, mine + sent), last = std::min(from + bytes, mine + bytes_);
  if (first >= last) return {0, 0};
  return {first - mine, last - mine};
}

bool SendSource::wouldLose(const void* begin, size_t bytes, size_t sent) const {
  const auto [low, high] = unsentIn(begin, bytes, sent);
  if (low == high) return false;
  for (const auto& [savedLow, savedHigh] : savedRanges_)
    if (savedLow <= low && high <= savedHigh) return false;
  return true;
}

void SendSource::saveBefore(const void* begin, size_t bytes, size_t sent) {
  const auto [low, high] = unsentIn(begin, bytes, sent);
  if (low == high) return;
  // Uninitialised: only the pages saved into become resident.
  if (!saved_) saved_.reset(new char[bytes_]);
  // Copy the gaps between what is saved already (which the original no longer holds), then
  // merge [low, high) into the ranges.
  size_t cursor = low;
  auto copyUpTo = [&](size_t end) {
    if (cursor < end) std::memcpy(saved_.get() + cursor, data_ + cursor, end - cursor);
  };
  for (const auto& [savedLow, savedHigh] : savedRanges_) {
    if (savedHigh <= cursor) continue;
    if (savedLow >= high) break;
    copyUpTo(savedLow);
    cursor = std::max(cursor, savedHigh);
  }
  copyUpTo(high);
  std::vector<std::pair<size_t, size_t>> merged;
  std::pair<size_t, size_t> added{low, high};
  for (const auto& range : savedRanges_) {
    if (range.second < added.first || range.first > added.second) {
      merged.push_back(range);
    } else {
      added = {std::min(added.first, range.first), std::max(added.second, range.second)};
    }
  }
  merged.push_back(added);
  std::sort(merged.begin(), merged.end());
  savedRanges_ = std::move(merged);
}

void SendSource::copyOut(void* out, size_t offset, size_t bytes) const {
  auto* to = static_cast<char*>(out);
  const size_t end = offset + bytes;
  size_t cursor = offset;
  for (const auto& [savedLow, savedHigh] : savedRanges_) {
    if (savedHigh <= cursor) continue;
    if (savedLow >= end) break;
    if (cursor < savedLow) {
      std::memmove(to + (cursor - offset), data_ + cursor, savedLow - cursor);
      cursor = savedLow;
    }
    const size_t upTo = std::min(end, savedHigh);
    std::memcpy(to + (cursor - offset), saved_.get() + cursor, upTo - cursor);
    cursor = upTo;
  }
  if (cursor < end) std::memmove(to + (cursor - offset), data_ + cursor, end - cursor);
}

}  // namespace tutti::runtime
