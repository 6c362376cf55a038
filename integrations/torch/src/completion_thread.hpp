// Completes works in the order they were issued, on a thread of its own, so that futures (which
// DDP's reducer chains on) complete without anyone calling wait(). tutti runs a communicator's
// operations in issue order, one at a time except that a point-to-point batch takes along the
// sends and receives queued right behind it and finishes with them: the oldest work is always
// done first or together with later work, so waiting on it first never delays a completion.
#pragma once

#include <c10/util/intrusive_ptr.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "integrations/torch/src/tutti_work.hpp"

namespace tutti_torch {

class CompletionThread {
 public:
  CompletionThread();
  ~CompletionThread();
  // Completes everything queued, then ends the thread (idempotent): tutti's own timeout
  // (TUTTI_TIMEOUT) bounds the wait.
  void stop();
  CompletionThread(const CompletionThread&) = delete;
  CompletionThread& operator=(const CompletionThread&) = delete;

  void enqueue(c10::intrusive_ptr<TuttiWork> work);

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<c10::intrusive_ptr<TuttiWork>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace tutti_torch
