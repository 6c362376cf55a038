// Staging slots for the frames of one direction of a tcp link, and which frame holds which.
//
// The slot a frame gets is the one freed last (a stack), not slot `frame % slots`: a link with
// one frame in flight at a time -- every small all-reduce -- keeps reusing one warm slot instead
// of cycling through all of them. Cycling touched `slots` times the memory: each slot's pages
// were first touched (a fault each) and then cold in the cache at every new size, which showed as
// the first calls at a larger size running 3x slower (4 ranks over tcp, 32 KiB, 8 slots).
// Over tcp the receiver alone decides where a frame lands, so nothing on the wire changes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace tutti::transport::tcp {

class SlotPool {
 public:
  SlotPool(size_t slots, size_t slotBytes);

  // Frame `frame`'s slot, taking a free one at its first call (later calls return the same).
  // Frames holding slots at once must differ modulo `slots` (a link's window of frames does);
  // a frame whose residue another frame holds is an internal error.
  std::byte* claim(uint64_t frame);
  // Frees frame `frame`'s slot, if it claimed one.
  void free(uint64_t frame);

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  struct Holder {
    uint64_t frame = 0;
    uint32_t slot = kNone;
  };
  struct Release {
    void operator()(std::byte* p) const;
  };
  size_t stride_;
  std::unique_ptr<std::byte, Release> data_;
  std::vector<uint32_t> freeSlots_;  // a stack: the last one freed is taken next
  std::vector<Holder> holders_;      // by frame % slots
};

}  // namespace tutti::transport::tcp
