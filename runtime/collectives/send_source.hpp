// Where a send of a point-to-point batch reads its bytes from. In-place send/recv (one buffer sent
// to one peer and received into from another) larger than a FIFO has its receive overwrite bytes
// the send has not sent yet, unless they are saved first. Copying the whole send up front (into a
// fresh buffer that page-faults in again on every call) made in-place 46x slower than
// out-of-place at 32 MiB. Instead a receive waits for the sends it would overwrite to go out
// first (p2p.cpp), and saves their bytes here only when waiting stops moving anything.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

namespace tutti::runtime {

class SendSource {
 public:
  SendSource(const void* data, size_t bytes)
      : data_(static_cast<const char*>(data)), bytes_(bytes) {}

  // Whether writing [begin, begin + bytes) may ever touch this send's bytes.
  bool overlaps(const void* begin, size_t bytes) const;
  // Whether writing [begin, begin + bytes) would destroy bytes of the send from offset `sent` on
  // (those before went out already) that are not saved.
  bool wouldLose(const void* begin, size_t bytes, size_t sent) const;
  // Before [begin, begin + bytes) is written: saves the bytes wouldLose names.
  void saveBefore(const void* begin, size_t bytes, size_t sent);
  // Copies the send's bytes [offset, offset + bytes) as they were when the batch began. `out`
  // may overlap the send's own buffer (a send to this rank itself, in place).
  void copyOut(void* out, size_t offset, size_t bytes) const;

 private:
  std::pair<size_t, size_t> unsentIn(const void* begin, size_t bytes, size_t sent) const;

  const char* data_;
  size_t bytes_;
  std::unique_ptr<char[]> saved_;  // as large as the send, touched only where bytes are saved
  std::vector<std::pair<size_t, size_t>> savedRanges_;  // [begin, end) offsets, sorted, disjoint
};

}  // namespace tutti::runtime
