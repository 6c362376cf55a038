// Test helpers: a world of ranks as threads, environment overrides that restore themselves, and
// running one function on every rank at once.
#pragma once

#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tutti/tutti.h"

namespace tutti::testing {

// Sets an environment variable for the lifetime of the object.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// Runs body(rank) on one thread per rank and returns the ranks' results.
template <typename Result>
std::vector<Result> onEveryRank(int nranks, const std::function<Result(int)>& body) {
  std::vector<Result> results(static_cast<size_t>(nranks));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < nranks; ++rank)
    threads.emplace_back([&, rank] { results[static_cast<size_t>(rank)] = body(rank); });
  for (auto& thread : threads) thread.join();
  return results;
}

// A thread world that destroys itself.
class ThreadWorld {
 public:
  explicit ThreadWorld(int nranks) : comms_(static_cast<size_t>(nranks), nullptr) {
    result_ = tutti_comm_init_all(comms_.data(), nranks);
    if (result_ != tuttiSuccess) error_ = tutti_get_last_error();
  }
  ~ThreadWorld() {
    if (result_ != tuttiSuccess) return;
    onEveryRank<int>(size(),
                     [this](int rank) { return static_cast<int>(tutti_comm_destroy(comm(rank))); });
  }
  ThreadWorld(const ThreadWorld&) = delete;
  ThreadWorld& operator=(const ThreadWorld&) = delete;

  bool ok() const { return result_ == tuttiSuccess; }
  const std::string& error() const { return error_; }
  int size() const { return static_cast<int>(comms_.size()); }
  tuttiComm_t comm(int rank) const { return comms_[static_cast<size_t>(rank)]; }

 private:
  std::vector<tuttiComm_t> comms_;
  tuttiResult_t result_;
  std::string error_;
};

}  // namespace tutti::testing
