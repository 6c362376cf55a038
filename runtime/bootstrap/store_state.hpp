// What a store server holds, without the networking: the key-value map, the world being joined,
// and the job failure. Waiting calls (get, join) block on a condition variable until they can
// answer, the wait ends, the server stops, or their client hangs up. Errors meant for the client
// are thrown as Error (kInvalidUsage for a job failure, kTimeout for a wait that ran out).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

namespace tutti::bootstrap {

class StoreState {
 public:
  // Thrown by waiting calls when the server stops or the client went away: nobody to answer.
  struct Abandoned {};
  using ClientGone = std::function<bool()>;

  void set(const std::string& key, const std::string& value);
  std::string get(const std::string& key, std::chrono::milliseconds wait,
                  const ClientGone& clientGone);
  int64_t add(const std::string& key, int64_t delta);
  bool check(const std::string& key);
  // Registers rank and waits until all nranks ranks joined; a conflict fails the whole job.
  void join(int rank, int nranks, const std::string& identity, std::chrono::milliseconds wait,
            const ClientGone& clientGone);
  // Wakes every waiter with Abandoned.
  void stop();

 private:
  using Lock = std::unique_lock<std::mutex>;
  void throwIfFailed() const;
  [[noreturn]] void fail(std::string message);
  // Waits until ready() or the wait ends (false); throws the job failure or Abandoned.
  bool waitFor(Lock& lock, const std::function<bool()>& ready, std::chrono::milliseconds wait,
               const ClientGone& clientGone);
  std::string missingRanks() const;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::unordered_map<std::string, std::string> data_;
  int worldSize_ = -1;  // fixed by the first JOIN
  int firstRank_ = -1;  // the rank whose JOIN fixed it
  std::map<int, std::string> joined_;
  std::string failure_;  // empty while the job is healthy
  bool stopping_ = false;
};

}  // namespace tutti::bootstrap
