// The progress engine of one communicator: runs its operations one at a time, in the order they
// were issued, except that a running batch of point-to-point transfers takes over the
// asynchronous sends and receives queued right behind it. Asynchronous operations run on a worker
// thread, started on first use, that sleeps on a condition variable while idle (an idle
// communicator uses no CPU). A blocking call on an idle communicator runs on the caller's own
// thread: a hand-off would cost microseconds, more than a whole small all-reduce.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "runtime/collectives/p2p_transfer.hpp"
#include "runtime/request.hpp"

namespace tutti::runtime {

// An asynchronous send or receive queued on the engine, which a batch of transfers running on it
// may take over (Engine::takeJoining).
struct JoiningTransfers {
  uint64_t sequence;
  std::vector<P2PTransfer> transfers;
};

class Engine {
 public:
  using Task = std::function<void()>;
  // onFailure is called with the error of a failed task (the communicator records it); onStart
  // on the worker thread as it starts (it keeps to a CPU: engine_placement.hpp).
  Engine(std::function<void(const Error&)> onFailure, std::function<void()> onStart);
  ~Engine();

  std::shared_ptr<Request> submit(Task task);
  // An asynchronous send or receive: runs as `task` unless a running batch of transfers takes it
  // over first, so that sends and receives that do not depend on each other progress together
  // (every rank posting a receive before its send must not wait behind itself).
  std::shared_ptr<Request> submitJoining(Task task, JoiningTransfers transfers);
  struct Joined {
    JoiningTransfers transfers;
    std::shared_ptr<Request> request;  // the taker completes or fails it
  };
  // For the running task: removes the joining transfers queued right behind it (up to the first
  // other task, so that order with everything else is kept).
  std::vector<Joined> takeJoining();
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
    std::optional<JoiningTransfers> joining;
  };
  std::shared_ptr<Request> enqueue(Item item);
  // True when nothing is queued or running; the caller then runs inline until releaseIdle().
  bool claimIdle();
  void releaseIdle();
  void workerLoop();
  void execute(Item& item);

  std::function<void(const Error&)> onFailure_;
  std::function<void()> onStart_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool busy_ = false;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace tutti::runtime
