#include "integrations/torch/src/registered_allocator.hpp"

#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>
#include <torch/version.h>

#include <atomic>
#include <limits>
#include <map>
#include <mutex>

#include "tutti/tutti.h"

namespace tutti_torch {
namespace {

constexpr size_t kPageBytes = 4096;
// Larger requests go to the previous allocator, whose error torch users know; rounding them up
// to pages would wrap around.
constexpr size_t kMaxBytes = std::numeric_limits<size_t>::max() / 2;

class RegisteredAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t bytes) const override {
    const size_t blockBytes = (bytes + kPageBytes - 1) / kPageBytes * kPageBytes;
    std::unique_lock lock(mutex_);
    c10::Allocator* previous = previous_;
    if (!enabled_ || bytes < minBytes_ || bytes > kMaxBytes) {
      lock.unlock();  // other threads allocate small tensors meanwhile
      return previous->allocate(bytes);
    }
    if (auto cached = cached_.find(blockBytes); cached != cached_.end()) {
      void* data = cached->second;
      cached_.erase(cached);
      cachedBytes_ -= blockBytes;
      return dataPtr(data, blockBytes);
    }
    lock.unlock();  // tutti_mem_alloc takes its own lock and makes system calls
    if (void* data = allocateRegistered(blockBytes)) {
      lock.lock();
      return dataPtr(data, blockBytes);
    }
    ++fallbacks_;
    return previous->allocate(bytes);
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
  void copy_data(void* dest, const void* src, size_t count) const override {
    default_copy_data(dest, src, count);
  }
#endif

  void enable(size_t minBytes, size_t maxCachedBytes) {
    std::lock_guard lock(mutex_);
    if (!enabled_) {
      c10::Allocator* current = c10::GetCPUAllocator();
      c10::SetCPUAllocator(this);
      TORCH_CHECK(c10::GetCPUAllocator() == this,
                  "tutti: the registered allocator cannot replace torch's CPU allocator: another "
                  "one was installed with a higher priority");
      previous_ = current;
      enabled_ = true;
    }
    minBytes_ = minBytes;
    maxCachedBytes_ = maxCachedBytes;
    trimLocked(maxCachedBytes_);
  }

  void disable() {
    std::lock_guard lock(mutex_);
    if (!enabled_) return;
    c10::SetCPUAllocator(previous_);
    enabled_ = false;
    trimLocked(0);
  }

  RegisteredAllocatorStats stats() const {
    std::lock_guard lock(mutex_);
    return {enabled_, minBytes_, maxCachedBytes_, liveBytes_, cachedBytes_, fallbacks_.load()};
  }

 private:
  struct Block {
    void* data;
    size_t bytes;
  };

  // Called with mutex_ released.
  void* allocateRegistered(size_t blockBytes) const {
    void* data = nullptr;
    if (tutti_mem_alloc(&data, blockBytes) == tuttiSuccess) return data;
    bool trimmed = false;
    {
      std::lock_guard lock(mutex_);
      trimmed = cachedBytes_ > 0;
      trimLocked(0);  // the cached blocks' descriptors and memory may be what was missing
    }
    if (trimmed && tutti_mem_alloc(&data, blockBytes) == tuttiSuccess) return data;
    TORCH_WARN_ONCE("tutti: the registered allocator serves ordinary memory for a tensor of ",
                    blockBytes, " bytes: ", tutti_get_last_error(),
                    " (later such tensors are not reported)");
    return nullptr;
  }

  c10::DataPtr dataPtr(void* data, size_t blockBytes) const {
    liveBytes_ += blockBytes;
    return {data, new Block{data, blockBytes}, &RegisteredAllocator::release,
            c10::Device(c10::DeviceType::CPU)};
  }

  static void release(void* context);

  void giveBack(const Block& block) {
    std::lock_guard lock(mutex_);
    liveBytes_ -= block.bytes;
    if (enabled_ && cachedBytes_ + block.bytes <= maxCachedBytes_) {
      cached_.emplace(block.bytes, block.data);
      cachedBytes_ += block.bytes;
      return;
    }
    tutti_mem_free(block.data);
  }

  void trimLocked(size_t keepBytes) const {
    while (cachedBytes_ > keepBytes) {
      auto largest = std::prev(cached_.end());
      tutti_mem_free(largest->second);
      cachedBytes_ -= largest->first;
      cached_.erase(largest);
    }
  }

  mutable std::mutex mutex_;
  bool enabled_ = false;
  c10::Allocator* previous_ = nullptr;
  size_t minBytes_ = 0, maxCachedBytes_ = 0;
  mutable std::multimap<size_t, void*> cached_;  // free blocks by size
  mutable size_t liveBytes_ = 0, cachedBytes_ = 0;
  mutable std::atomic<uint64_t> fallbacks_ = 0;
};

// Never destroyed: tensors may be freed during interpreter shutdown, after static destructors.
RegisteredAllocator& instance() {
  static auto* allocator = new RegisteredAllocator;
  return *allocator;
}

void RegisteredAllocator::release(void* context) {
  auto* block = static_cast<Block*>(context);
  instance().giveBack(*block);
  delete block;
}

}  // namespace

void enableRegisteredAllocator(size_t minBytes, size_t maxCachedBytes) {
  TORCH_CHECK(minBytes > 0, "tutti: the registered allocator's min_bytes must be positive");
  instance().enable(minBytes, maxCachedBytes);
}

void disableRegisteredAllocator() {
  instance().disable();
}

RegisteredAllocatorStats registeredAllocatorStats() {
  return instance().stats();
}

}  // namespace tutti_torch
