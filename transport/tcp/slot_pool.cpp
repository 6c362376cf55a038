#include "transport/tcp/slot_pool.hpp"

#include <cstdlib>

#include "base/error.hpp"

namespace tutti::transport::tcp {
namespace {

// Kernels may use vector loads on slot memory.
constexpr size_t kAlign = 64;

}  // namespace

SlotPool::SlotPool(size_t slots, size_t slotBytes)
    : stride_((slotBytes + kAlign - 1) / kAlign * kAlign), holders_(slots) {
  void* p = std::aligned_alloc(kAlign, slots * stride_);
  if (!p) raise(ErrorCode::kSystem, "tcp: cannot allocate {} slots of {} bytes", slots, slotBytes);
  data_.reset(static_cast<std::byte*>(p));
  // Slot 0 on top: the first frames use the start of the buffer.
  for (size_t i = slots; i-- > 0;) freeSlots_.push_back(static_cast<uint32_t>(i));
}

void SlotPool::Release::operator()(std::byte* p) const {
  std::free(p);
}

std::byte* SlotPool::claim(uint64_t frame) {
  Holder& holder = holders_[frame % holders_.size()];
  if (holder.slot == kNone) {
    // Never empty here: there are as many slots as places, and each place holds one at most.
    holder = {frame, freeSlots_.back()};
    freeSlots_.pop_back();
  } else if (holder.frame != frame) {
    raise(ErrorCode::kInternal, "tcp: frame {} wants a slot while frame {} holds its place", frame,
          holder.frame);
  }
  return data_.get() + holder.slot * stride_;
}

void SlotPool::free(uint64_t frame) {
  Holder& holder = holders_[frame % holders_.size()];
  if (holder.slot == kNone || holder.frame != frame) return;
  freeSlots_.push_back(holder.slot);
  holder.slot = kNone;
}

}  // namespace tutti::transport::tcp
