// Random peer-memory offers (transport/peer_memory.hpp) and their field-by-field comparison, for
// the tests of the offers' byte forms: the peer-memory part itself and the direct offers that
// carry it (tests/unit/runtime/direct_offer_test.cpp).
#pragma once

#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <random>

#include "transport/peer_memory.hpp"

namespace tutti::tests {

inline transport::BufferOffer randomBufferOffer(std::mt19937_64& rng) {
  transport::BufferOffer buffer;
  buffer.address = rng();
  buffer.registered = rng() % 2 == 1;
  buffer.range = {rng(), rng(), rng(), static_cast<int32_t>(rng()), rng(), rng()};
  return buffer;
}

inline transport::MemoryOffer randomMemoryOffer(std::mt19937_64& rng) {
  transport::MemoryOffer offer;
  offer.anyBuffers = rng() % 2 == 1;
  for (uint8_t& byte : offer.process.nonce) byte = static_cast<uint8_t>(rng());
  offer.process.address = rng();
  offer.send = randomBufferOffer(rng);
  offer.recv = randomBufferOffer(rng);
  return offer;
}

inline void checkSame(const transport::BufferOffer& got, const transport::BufferOffer& want) {
  CHECK(got.address == want.address);
  CHECK(got.registered == want.registered);
  CHECK(got.range.id == want.range.id);
  CHECK(got.range.device == want.range.device);
  CHECK(got.range.inode == want.range.inode);
  CHECK(got.range.fd == want.range.fd);
  CHECK(got.range.allocationBytes == want.range.allocationBytes);
  CHECK(got.range.offset == want.range.offset);
}

inline void checkSame(const transport::MemoryOffer& got, const transport::MemoryOffer& want) {
  CHECK(got.anyBuffers == want.anyBuffers);
  CHECK(got.process.nonce == want.process.nonce);
  CHECK(got.process.address == want.process.address);
  checkSame(got.send, want.send);
  checkSame(got.recv, want.recv);
}

// The little-endian unsigned integer of `width` bytes at `at` of an encoded offer.
template <typename Bytes>
uint64_t littleEndianAt(const Bytes& bytes, size_t at, size_t width) {
  uint64_t value = 0;
  for (size_t i = 0; i < width; ++i)
    value |= uint64_t{static_cast<uint8_t>(bytes[at + i])} << (8 * i);
  return value;
}

}  // namespace tutti::tests
