// The chunk and offset arithmetic of every algorithm, in one place.
//
// A buffer of `count` elements is processed in sections of `parts` chunks; every section but the
// last is full (chunks of `slotElems`, one slot each), the last is cut into chunks of
// ceil(rest / parts), so that its final chunks may be shorter or empty (tests/unit/runtime/
// chunking_test.cpp). All ranks compute the same cuts, so empty chunks are skipped on both ends of
// a connection alike.
#pragma once

#include <algorithm>
#include <cstddef>

namespace tutti::runtime {

struct Range {
  size_t offset = 0;
  size_t count = 0;
};

class Sections {
 public:
  Sections(size_t count, size_t parts, size_t slotElems)
      : count_(count), parts_(std::max<size_t>(parts, 1)), sectionElems_(parts_ * slotElems) {}

  size_t size() const { return (count_ + sectionElems_ - 1) / sectionElems_; }

  // Chunk `part` of section `section`.
  Range chunk(size_t section, size_t part) const {
    const size_t base = section * sectionElems_;
    const size_t inSection = std::min(sectionElems_, count_ - base);
    const size_t per = (inSection + parts_ - 1) / parts_;
    const size_t begin = std::min(part * per, inSection);
    const size_t end = std::min(begin + per, inSection);
    return {base + begin, end - begin};
  }

 private:
  size_t count_;
  size_t parts_;
  size_t sectionElems_;
};

// Splits [0, count) into `parts` nearly equal contiguous ranges (the first ones one larger).
inline Range evenSplit(size_t count, size_t parts, size_t index) {
  const size_t base = count / parts, extra = count % parts;
  return {index * base + std::min(index, extra), base + (index < extra ? 1 : 0)};
}

inline int modRank(long value, int n) {
  return static_cast<int>(((value % n) + n) % n);
}

}  // namespace tutti::runtime
