#include "runtime/gpu/pinned_pool.hpp"

#include <bit>
#include <condition_variable>
#include <map>
#include <mutex>
#include <vector>

#include "base/log.hpp"
#include "runtime/gpu/driver.hpp"

namespace tutti::runtime::gpu {

// Shared with the leases, so that a lease ending after close() touches live memory.
struct PinnedPool::State {
  std::mutex mutex;
  std::condition_variable returned;
  std::multimap<size_t, void*> free;  // by size
  std::vector<void*> allocated;
  size_t lent = 0;
};

namespace {
constexpr size_t kSmallestBlock = 4096;
}

PinnedPool::Lease::Lease(std::shared_ptr<State> state, void* data, size_t size)
    : state_(std::move(state)), data_(data), size_(size) {}

PinnedPool::Lease::~Lease() {
  {
    std::lock_guard lock(state_->mutex);
    state_->free.emplace(size_, data_);
    --state_->lent;
  }
  state_->returned.notify_all();
}

PinnedPool::PinnedPool() : state_(std::make_shared<State>()) {}

PinnedPool::~PinnedPool() {
  close(std::chrono::milliseconds(0));
}

std::unique_ptr<PinnedPool::Lease> PinnedPool::take(size_t bytes, void* context) {
  const size_t size = std::bit_ceil(std::max(bytes, kSmallestBlock));
  {
    std::lock_guard lock(state_->mutex);
    if (auto fit = state_->free.lower_bound(size); fit != state_->free.end()) {
      auto lease = std::make_unique<Lease>(state_, fit->second, fit->first);
      state_->free.erase(fit);
      ++state_->lent;
      return lease;
    }
  }
  void* data = nullptr;
  {
    ContextScope scope(static_cast<CUcontext>(context));
    check(driver().hostAlloc(&data, size, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP),
          "cuMemHostAlloc of the staging buffer");
  }
  std::lock_guard lock(state_->mutex);
  state_->allocated.push_back(data);
  ++state_->lent;
  return std::make_unique<Lease>(state_, data, size);
}

void PinnedPool::close(std::chrono::milliseconds timeout) {
  std::unique_lock lock(state_->mutex);
  if (state_->allocated.empty()) return;
  if (!state_->returned.wait_for(lock, timeout, [this] { return state_->lent == 0; })) {
    log::warn(
        "gpu: {} staging buffers are still in use by streams at destroy; their pinned memory "
        "stays allocated",
        state_->lent);
    // Leases keep the state alive; nothing of it is freed under the GPU.
    state_->allocated.clear();
    state_->free.clear();
    return;
  }
  for (void* data : state_->allocated) driver().freeHost(data);
  state_->allocated.clear();
  state_->free.clear();
}

}  // namespace tutti::runtime::gpu
