// What a store server holds, without the networking: the key-value map, the world being joined,
// and the job failure. Waiting calls (get, join) block on a condition variable until they can
// answer, the wait ends, the server stops, or their client hangs up. Errors meant for the client
// are thrown as Error (kInvalidUsage for a job failure, a refusal or a full store, kTimeout for a
// wait that ran out).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>

#include "runtime/bootstrap/bootstrap.hpp"

namespace tutti::bootstrap {

// Who sent a request (JOIN, FAIL) or opened a refused connection, as far as the store knows.
struct Caller {
  int rank = -1;
  int nranks = -1;
  std::string identity;  // "host:pid", as the rank describes itself
  std::string address;   // the connection's host, as the server sees it
  // One of the job's own: proved the secret, or, in a job without one, claimed its launcher job
  // id. What a trusted caller does wrong fails the job (it is one of ours, misconfigured); what
  // anyone else does is refused and noted, and the job goes on.
  bool trusted = false;
};

class StoreState {
 public:
  // Thrown by waiting calls when the server stops or the client went away: nobody to answer.
  struct Abandoned {};
  using ClientGone = std::function<bool()>;

  // `secured`: the job has a secret; without one, a world that spans hosts draws a warning.
  // `membersKnown`: trust tells the job's members from others (a secret, or a launcher job id):
  // an untrusted JOIN is then refused outright, so another job's rank cannot fix the world size.
  StoreState(bool secured, bool membersKnown, StoreLimits limits = {});

  void set(const std::string& key, const std::string& value);
  std::string get(const std::string& key, std::chrono::milliseconds wait,
                  const ClientGone& clientGone);
  int64_t add(const std::string& key, int64_t delta);
  bool check(const std::string& key);
  // Registers a rank and waits until all ranks joined. A conflict (another world size, a rank
  // out of range or taken) fails the whole job when the joiner is trusted, else refuses it.
  void join(const Caller& joiner, std::chrono::milliseconds wait, const ClientGone& clientGone);
  // A trusted caller's report fails the job with `message` (true); anyone else's is refused
  // (kInvalidUsage) and noted.
  void reportFailure(const Caller& caller, const std::string& message);
  // A connection claiming a rank was dropped before it could make a request (say, it did not
  // prove the secret): the ranks still waiting quote it in their timeout message.
  void noteRefused(const Caller& caller, const std::string& why);
  // Wakes every waiter with Abandoned.
  void stop();

 private:
  using Lock = std::unique_lock<std::mutex>;
  void throwIfFailed() const;
  void recordFailure(std::string message);
  [[noreturn]] void fail(std::string message);
  std::string note(const std::string& what, const Caller& caller, const std::string& why);
  // Refuses an untrusted request; the ranks still waiting hear of it in their timeout message.
  [[noreturn]] void refuse(const std::string& what, const Caller& caller, const std::string& why);
  // Throws kInvalidUsage when storing `value` at `key` would pass the limits.
  void reserve(const std::string& op, const std::string& key, const std::string& value);
  void store(const std::string& key, std::string value);
  void warnIfOpenAcrossHosts();
  // Waits until ready() or the wait ends (false); throws the job failure or Abandoned.
  bool waitFor(Lock& lock, const std::function<bool()>& ready, std::chrono::milliseconds wait,
               const ClientGone& clientGone);
  std::string missingRanks() const;

  const bool secured_;
  const bool membersKnown_;
  const StoreLimits limits_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::unordered_map<std::string, std::string> data_;
  size_t bytes_ = 0;  // what data_ holds, counted as StoreLimits says
  bool warnedFull_ = false;
  int worldSize_ = -1;  // fixed by the first JOIN
  int firstRank_ = -1;  // the rank whose JOIN fixed it
  std::map<int, std::string> joined_;
  std::set<std::string> joinedFrom_;     // the joiners' hosts
  std::map<int, std::string> refusals_;  // claimed rank -> why a connection claiming it was refused
  std::string failure_;                  // empty while the job is healthy
  bool stopping_ = false;
};

}  // namespace tutti::bootstrap
