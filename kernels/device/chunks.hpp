// kernels/device/chunks.hpp: the chunk arithmetic every schedule shares. A buffer is split
// between channels, and a channel's part into chunks of at most one slot; boundaries fall on
// 16-byte multiples of the buffer (but the last), so that aligned buffers move in whole vectors.
#pragma once

#include <cstddef>

#include "kernels/half.hpp"  // TUTTI_HOST_DEVICE

namespace tutti::kernels::device {

struct Range {
  size_t offset;
  size_t count;
};

// Part `part` of [0, total) cut into `parts` pieces of ceil(total / parts) rounded up to a
// multiple of `align`; the last pieces may be shorter or empty. Every element is in one piece,
// in order, and every piece starts at a multiple of `align`.
TUTTI_HOST_DEVICE inline Range alignedSplit(size_t total, size_t parts, size_t part, size_t align) {
  const size_t per = ((total + parts - 1) / parts + align - 1) / align * align;
  const size_t begin = part * per < total ? part * per : total;
  const size_t end = begin + per < total ? begin + per : total;
  return {begin, end - begin};
}

// Elements of T in 16 bytes (1 where T does not divide them): the alignment of every boundary.
template <typename T>
inline constexpr size_t kAlignElems = 16 % sizeof(T) == 0 ? 16 / sizeof(T) : 1;

// This channel's part of `count` elements.
template <typename T>
TUTTI_HOST_DEVICE Range channelPart(size_t count, int nchannels, int channel) {
  return alignedSplit(count, static_cast<size_t>(nchannels), static_cast<size_t>(channel),
                      kAlignElems<T>);
}

// Elements of T in a chunk of at most chunkBytes: whole 16-byte units (an LL slot of 48 bytes
// carries 24: a chunk takes 16 of them).
template <typename T>
TUTTI_HOST_DEVICE size_t chunkElems(size_t chunkBytes) {
  return chunkBytes / 16 * 16 / sizeof(T);
}

TUTTI_HOST_DEVICE inline size_t smallerOf(size_t a, size_t b) {
  return a < b ? a : b;
}

}  // namespace tutti::kernels::device
