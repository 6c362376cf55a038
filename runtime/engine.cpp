#include "runtime/engine.hpp"

#include <pthread.h>

namespace tutti::runtime {

Engine::Engine(std::function<void(const Error&)> onFailure, std::function<void()> onStart)
    : onFailure_(std::move(onFailure)), onStart_(std::move(onStart)) {}

Engine::~Engine() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void Engine::execute(Item& item) {
  try {
    item.task();
    item.request->complete();
  } catch (const Error& error) {
    onFailure_(error);
    item.request->fail(error);
  } catch (const std::exception& error) {
    const Error internal(ErrorCode::kInternal, error.what());
    onFailure_(internal);
    item.request->fail(internal);
  }
}

std::shared_ptr<Request> Engine::submit(Task task) {
  return enqueue({std::move(task), std::make_shared<Request>(), std::nullopt});
}

std::shared_ptr<Request> Engine::submitJoining(Task task, JoiningTransfers transfers) {
  return enqueue({std::move(task), std::make_shared<Request>(), std::move(transfers)});
}

std::shared_ptr<Request> Engine::enqueue(Item item) {
  std::shared_ptr<Request> request = item.request;
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(item));
    if (!worker_.joinable()) worker_ = std::thread([this] { workerLoop(); });
  }
  cv_.notify_all();
  return request;
}

std::vector<Engine::Joined> Engine::takeJoining() {
  std::vector<Joined> taken;
  std::lock_guard lock(mutex_);
  while (!queue_.empty() && queue_.front().joining) {
    taken.push_back({std::move(*queue_.front().joining), std::move(queue_.front().request)});
    queue_.pop_front();
  }
  return taken;
}

bool Engine::claimIdle() {
  std::lock_guard lock(mutex_);
  if (busy_ || !queue_.empty()) return false;
  busy_ = true;
  return true;
}

void Engine::releaseIdle() {
  {
    std::lock_guard lock(mutex_);
    busy_ = false;
  }
  cv_.notify_all();
}

void Engine::drain() {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [this] { return !busy_ && queue_.empty(); });
}

void Engine::workerLoop() {
  // Named, so that top -H, perf and gdb tell it from the application's threads.
  pthread_setname_np(pthread_self(), "tutti-engine");
  onStart_();
  std::unique_lock lock(mutex_);
  for (;;) {
    cv_.wait(lock, [this] { return (stopping_ && queue_.empty()) || (!busy_ && !queue_.empty()); });
    if (queue_.empty()) return;
    Item item = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    execute(item);
    lock.lock();
    busy_ = false;
    cv_.notify_all();
  }
}

}  // namespace tutti::runtime
