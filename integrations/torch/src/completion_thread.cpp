#include "integrations/torch/src/completion_thread.hpp"

namespace tutti_torch {

CompletionThread::CompletionThread() : thread_([this] { loop(); }) {}

CompletionThread::~CompletionThread() {
  stop();
}

void CompletionThread::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void CompletionThread::enqueue(c10::intrusive_ptr<TuttiWork> work) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(work));
  }
  cv_.notify_one();
}

void CompletionThread::loop() {
  for (;;) {
    c10::intrusive_ptr<TuttiWork> work;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      work = std::move(queue_.front());
      queue_.pop_front();
    }
    work->waitAndComplete();
  }
}

}  // namespace tutti_torch
