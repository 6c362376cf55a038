// Collectives over a store: allgather (everyone sets prefix/rank, then reads all) and barrier
// (a counter at prefix/count; the last arriver sets prefix/done, which everyone waits for).
#include "base/error.hpp"
#include "runtime/bootstrap/bootstrap.hpp"

namespace tutti::bootstrap {
namespace {

void checkRank(const char* what, const std::string& prefix, int rank, int nranks) {
  if (nranks < 1 || rank < 0 || rank >= nranks)
    raise(ErrorCode::kInvalidArgument, "{} '{}': rank {} is out of range for {} ranks", what,
          prefix, rank, nranks);
}

// The value at key once set. With whileWaiting, the wait is cut into 100 ms slices with a call of
// it after each (it may throw to give up early). A timeout rethrows the store's own error.
std::string waitForKey(Store& store, const std::string& key, const Deadline& deadline,
                       const std::function<void()>& whileWaiting) {
  for (;;) {
    const bool sliced = whileWaiting && deadline.remainingMs() > 100;
    try {
      return store.get(key, sliced ? Deadline::after(std::chrono::milliseconds(100)) : deadline);
    } catch (const Error& error) {
      if (error.code() != ErrorCode::kTimeout || !sliced) throw;
    }
    whileWaiting();
  }
}

}  // namespace

std::vector<std::string> allgather(Store& store, const std::string& prefix, int rank, int nranks,
                                   const std::string& value, const Deadline& deadline,
                                   const std::function<void()>& whileWaiting) {
  checkRank("allgather", prefix, rank, nranks);
  store.set(prefix + "/" + std::to_string(rank), value);
  std::vector<std::string> values(static_cast<size_t>(nranks));
  for (int peer = 0; peer < nranks; ++peer) {
    if (peer == rank) {
      values[static_cast<size_t>(peer)] = value;
      continue;
    }
    try {
      values[static_cast<size_t>(peer)] =
          waitForKey(store, prefix + "/" + std::to_string(peer), deadline, whileWaiting);
    } catch (const Error& error) {
      if (error.code() != ErrorCode::kTimeout) throw;
      raise(ErrorCode::kTimeout, "allgather '{}': rank {} never contributed ({})", prefix, peer,
            error.what());
    }
  }
  return values;
}

void barrier(Store& store, const std::string& prefix, int nranks, const Deadline& deadline,
             const std::function<void()>& whileWaiting) {
  checkRank("barrier", prefix, 0, nranks);
  const int64_t arrived = store.add(prefix + "/count", 1);
  if (arrived > nranks)
    raise(ErrorCode::kInvalidUsage, "barrier '{}': {} arrivals for {} ranks (prefix reused?)",
          prefix, arrived, nranks);
  if (arrived == nranks) store.set(prefix + "/done", "1");
  try {
    waitForKey(store, prefix + "/done", deadline, whileWaiting);
  } catch (const Error& error) {
    if (error.code() != ErrorCode::kTimeout) throw;
    raise(ErrorCode::kTimeout, "barrier '{}': only {} of {} ranks arrived before the deadline",
          prefix, store.add(prefix + "/count", 0), nranks);
  }
}

}  // namespace tutti::bootstrap
