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
  // Runs task to completion, inline when idle; rethrows its error.
  void run(Task task);
  // Waits for every submitted task to finish.
  void drain();

 private:
  struct Item {
    Task task;
    std::shared_ptr<Request> request;
  };
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
