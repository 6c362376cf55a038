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
// Refusals quoted in a join timeout: the latest per claimed rank, the lowest ranks first.
constexpr size_t kRefusalsQuoted = 4;
// Refusals remembered, so that a stranger claiming rank after rank cannot grow the map for ever.
constexpr size_t kRefusalsKept = 64;

size_t entryBytes(const std::string& key, const std::string& value) {
  return key.size() + value.size() + StoreLimits::kEntryBytes;
}

}  // namespace

StoreState::StoreState(bool secured, bool membersKnown, StoreLimits limits)
    : secured_(secured), membersKnown_(membersKnown), limits_(limits) {}

void StoreState::set(const std::string& key, const std::string& value) {
  Lock lock(mutex_);
  throwIfFailed();
  reserve("SET", key, value);
  store(key, value);
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
  const std::string text = std::to_string(value);
  reserve("ADD", key, text);
  store(key, text);
  return value;
}

bool StoreState::check(const std::string& key) {
  Lock lock(mutex_);
  throwIfFailed();
  return data_.count(key) != 0;
}

void StoreState::join(const Caller& joiner, std::chrono::milliseconds wait,
                      const ClientGone& clientGone) {
  Lock lock(mutex_);
  throwIfFailed();
  const auto conflict = [&](std::string why) {
    if (joiner.trusted) fail(std::move(why));
    refuse("JOIN", joiner, why);
  };
  if (!joiner.trusted && membersKnown_)
    refuse("JOIN", joiner, "it is not of this job (it gave another launcher job id, or none)");
  const int rank = joiner.rank;
  const int nranks = joiner.nranks;
  if (nranks < 1)
    conflict(
        fmt::format("rank {} ({}) gave an invalid world size {}", rank, joiner.identity, nranks));
  if (worldSize_ >= 0 && nranks != worldSize_)
    conflict(fmt::format("world size mismatch: rank {} says {}, rank {} says {}", rank, nranks,
                         firstRank_, worldSize_));
  if (rank < 0 || rank >= nranks)
    conflict(fmt::format("rank {} ({}) is out of range for a world of {} ranks", rank,
                         joiner.identity, nranks));
  const auto previous = joined_.find(rank);
  if (previous != joined_.end())
    conflict(
        fmt::format("rank {} joined twice: {} and {}", rank, previous->second, joiner.identity));
  if (worldSize_ < 0) {
    worldSize_ = nranks;
    firstRank_ = rank;
  }
  joined_.emplace(rank, joiner.identity);
  joinedFrom_.insert(joiner.address);
  changed_.notify_all();
  if (static_cast<int>(joined_.size()) == worldSize_) warnIfOpenAcrossHosts();
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

void StoreState::reportFailure(const Caller& caller, const std::string& message) {
  Lock lock(mutex_);
  throwIfFailed();
  if (!caller.trusted) refuse("FAIL", caller, "it reported: " + message);
  recordFailure(message);
}

void StoreState::noteRefused(const Caller& caller, const std::string& why) {
  Lock lock(mutex_);
  if (caller.rank < 0) return;
  note("connection", caller, why);
}

void StoreState::recordFailure(std::string message) {
  failure_ = std::move(message);
  log::warn("bootstrap store: the job failed: {}", failure_);
  changed_.notify_all();
}

void StoreState::fail(std::string message) {
  recordFailure(std::move(message));
  throw Error(ErrorCode::kInvalidUsage, failure_);
}

std::string StoreState::note(const std::string& what, const Caller& caller,
                             const std::string& why) {
  std::string refusal =
      fmt::format("a {} from {} claiming rank {} of {} ({}) was refused: {}", what, caller.address,
                  caller.rank, caller.nranks, caller.identity, why);
  if (refusals_.size() < kRefusalsKept || refusals_.count(caller.rank))
    refusals_[caller.rank] = refusal;
  return refusal;
}

void StoreState::refuse(const std::string& what, const Caller& caller, const std::string& why) {
  // Not the job's failure: it may be anyone's, e.g. another job's on this port.
  raise(ErrorCode::kInvalidUsage, "{} (the job it tried to join goes on)", note(what, caller, why));
}

void StoreState::reserve(const std::string& op, const std::string& key, const std::string& value) {
  const auto found = data_.find(key);
  const size_t freed = found == data_.end() ? 0 : entryBytes(key, found->second);
  const size_t keys = data_.size() + (found == data_.end() ? 1 : 0);
  const size_t bytes = bytes_ - freed + entryBytes(key, value);
  if (keys <= limits_.maxKeys && bytes <= limits_.maxBytes) return;
  const std::string message = fmt::format(
      "the bootstrap store is full: {} of key '{}' ({} bytes) would pass its limit of {} keys "
      "and {} bytes (it holds {} keys, {} bytes)",
      op, key, value.size(), limits_.maxKeys, limits_.maxBytes, data_.size(), bytes_);
  if (!warnedFull_)
    log::warn("{}; later refusals are not logged (a stranger filling a store without a secret?)",
              message);
  warnedFull_ = true;
  throw Error(ErrorCode::kInvalidUsage, message);
}

void StoreState::store(const std::string& key, std::string value) {
  auto [at, fresh] = data_.try_emplace(key);
  if (!fresh) bytes_ -= entryBytes(key, at->second);
  bytes_ += entryBytes(key, value);
  at->second = std::move(value);
  changed_.notify_all();
}

void StoreState::warnIfOpenAcrossHosts() {
  if (secured_ || joinedFrom_.size() < 2) return;
  log::warn(
      "bootstrap store: this job spans {} hosts and has no secret: anyone who reaches the "
      "rendezvous port can join or disturb it; set TUTTI_SECRET (32 hex digits, the same on "
      "every rank)",
      joinedFrom_.size());
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
    if (listed == 8) {
      out += ", ...";
      break;
    }
    out += (listed++ ? ", " : "") + std::to_string(rank);
  }
  size_t quoted = 0;
  for (const auto& [rank, refusal] : refusals_)
    if (quoted++ < kRefusalsQuoted) out += (quoted == 1 ? "; meanwhile " : "; ") + refusal;
  return out;
}

}  // namespace tutti::bootstrap
