// The progress engine of one communicator: runs its operations one at a time, in the order they
// were issued. Asynchronous operations run on a worker thread, started on first use, that sleeps
// on a condition variable while idle (an idle communicator uses no CPU). A blocking call on an
// idle communicator runs on the caller's own thread: a hand-off would cost microseconds, more
// than a whole small all-reduce.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "runtime/request.hpp"

namespace tutti::runtime {

class Engine {
 public:
  using Task = std::function<void()>;
  // Called with the error of a failed task; the communicator records it.
  explicit Engine(std::function<void(const Error&)> onFailure);
  ~Engine();

  std::shared_ptr<Request> submit(Task task);
  // Runs task to completion, inline when idle (no type erasure, no allocation: this is the
  // small-message latency path); rethrows its error.
  template <typename F>
  void run(F&& task) {
    if (!claimIdle()) {
      auto request = submit(Task(std::forward<F>(task)));
      request->wait();
      request->rethrow();
      return;
    }
    struct Release {
      Engine& engine;
      ~Release() { engine.releaseIdle(); }
    } release{*this};
    try {
      task();
    } catch (const Error& error) {
      onFailure_(error);
      throw;
    } catch (const std::exception& error) {
      const Error internal(ErrorCode::kInternal, error.what());
      onFailure_(internal);
      throw internal;
    }
  }
  // Waits for every submitted task to finish.
  void drain();

 private:
  struct Item {
    Task task;
    std::shared_ptr<Request> request;
  };
  // True when nothing is queued or running; the caller then runs inline until releaseIdle().
  bool claimIdle();
  void releaseIdle();
  void workerLoop();
  void execute(Item& item);

  std::function<void(const Error&)> onFailure_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool busy_ = false;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace tutti::runtime
