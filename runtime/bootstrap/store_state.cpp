#include "runtime/bootstrap/store_state.hpp"

#include <algorithm>
#include <charconv>

#include "base/error.hpp"
#include "base/log.hpp"

namespace tutti::bootstrap {
namespace {

// Waits longer than this are capped (a client asking for "forever" sends a huge number).
constexpr std::chrono::milliseconds kMaxWait = std::chrono::hours(24 * 30);
// How often a waiter looks whether its client hung up.
constexpr std::chrono::milliseconds kHangupCheck{250};

}  // namespace

void StoreState::set(const std::string& key, const std::string& value) {
  Lock lock(mutex_);
  throwIfFailed();
  data_[key] = value;
  changed_.notify_all();
}

std::string StoreState::get(const std::string& key, std::chrono::milliseconds wait,
                            const ClientGone& clientGone) {
  Lock lock(mutex_);
  if (!waitFor(
          lock, [&] { return data_.count(key) != 0; }, wait, clientGone))
    raise(ErrorCode::kTimeout, "key '{}' was not set within {} ms", key, wait.count());
  return data_[key];
}

int64_t StoreState::add(const std::string& key, int64_t delta) {
  Lock lock(mutex_);
  throwIfFailed();
  int64_t value = 0;
  auto found = data_.find(key);
  if (found != data_.end()) {
    const std::string& text = found->second;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size())
      raise(ErrorCode::kInvalidUsage, "add to key '{}': its value is not an integer", key);
  }
  if (__builtin_add_overflow(value, delta, &value))
    raise(ErrorCode::kInvalidUsage, "add to key '{}' overflows", key);
  data_[key] = std::to_string(value);
  changed_.notify_all();
  return value;
}

bool StoreState::check(const std::string& key) {
  Lock lock(mutex_);
  throwIfFailed();
  return data_.count(key) != 0;
}

void StoreState::join(int rank, int nranks, const std::string& identity,
                      std::chrono::milliseconds wait, const ClientGone& clientGone) {
  Lock lock(mutex_);
  throwIfFailed();
  if (nranks < 1)
    fail(fmt::format("rank {} ({}) gave an invalid world size {}", rank, identity, nranks));
  if (worldSize_ < 0) {
    worldSize_ = nranks;
    firstRank_ = rank;
  }
  if (nranks != worldSize_)
    fail(fmt::format("world size mismatch: rank {} says {}, rank {} says {}", rank, nranks,
                     firstRank_, worldSize_));
  if (rank < 0 || rank >= nranks)
    fail(fmt::format("rank {} ({}) is out of range for a world of {} ranks", rank, identity,
                     nranks));
  const auto [previous, fresh] = joined_.emplace(rank, identity);
  if (!fresh)
    fail(fmt::format("rank {} joined twice: {} and {}", rank, previous->second, identity));
  changed_.notify_all();
  if (!waitFor(
          lock, [&] { return static_cast<int>(joined_.size()) == worldSize_; }, wait, clientGone))
    raise(ErrorCode::kTimeout, "{} of {} ranks joined within {} ms; missing: {}", joined_.size(),
          worldSize_, wait.count(), missingRanks());
}

void StoreState::stop() {
  Lock lock(mutex_);
  stopping_ = true;
  changed_.notify_all();
}

void StoreState::throwIfFailed() const {
  if (!failure_.empty()) throw Error(ErrorCode::kInvalidUsage, failure_);
}

void StoreState::fail(std::string message) {
  failure_ = std::move(message);
  log::warn("bootstrap store: the job failed: {}", failure_);
  changed_.notify_all();
  throw Error(ErrorCode::kInvalidUsage, failure_);
}

bool StoreState::waitFor(Lock& lock, const std::function<bool()>& ready,
                         std::chrono::milliseconds wait, const ClientGone& clientGone) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point until = Clock::now() + std::min(wait, kMaxWait);
  for (;;) {
    throwIfFailed();
    if (ready()) return true;  // before stopping_: an answer that is ready still goes out
    if (stopping_) throw Abandoned{};
    const Clock::time_point now = Clock::now();
    if (now >= until) return false;
    changed_.wait_until(lock, std::min(until, now + kHangupCheck));
    lock.unlock();
    const bool gone = clientGone && clientGone();
    lock.lock();
    if (gone) throw Abandoned{};
  }
}

std::string StoreState::missingRanks() const {
  std::string out;
  int listed = 0;
  for (int rank = 0; rank < worldSize_; ++rank) {
    if (joined_.count(rank)) continue;
    if (listed == 8) return out + ", ...";
    out += (listed++ ? ", " : "") + std::to_string(rank);
  }
  return out;
}

}  // namespace tutti::bootstrap
