// One shm FIFO (transport/shm/fifo.hpp) on plain memory: what a slot's header line carries, where
// the receiver finds the payload, credits, and a producer thread racing its consumer.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "transport/shm/fifo.hpp"

namespace tutti::transport::shm {
namespace {

constexpr size_t kSlots = 4;
constexpr size_t kSlotBytes = 256;

// Zeroed page-aligned memory: a fresh, empty FIFO.
struct FifoMemory {
  FifoMemory() : layout(FifoLayout::of(kSlots, kSlotBytes)) {
    base.reset(static_cast<std::byte*>(std::aligned_alloc(kPageBytes, layout.bytes)));
    std::memset(base.get(), 0, layout.bytes);
  }
  bool inHeaders(const void* p) const {
    const auto* b = static_cast<const std::byte*>(p);
    return b >= base.get() + FifoLayout::kHeadersOffset && b < base.get() + layout.dataOffset;
  }

  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  FifoLayout layout;
  std::unique_ptr<std::byte, Free> base;
};

Tag tagOf(uint64_t index) {
  return Tag{{index, index * 3 + 1, ~index}};
}

std::byte byteOf(uint64_t index, size_t at) {
  return static_cast<std::byte>((index * 131 + at * 7) & 0xff);
}

void postMessage(FifoSender& sender, uint64_t index, size_t bytes) {
  auto* slot = static_cast<std::byte*>(sender.tryAcquire());
  REQUIRE(slot != nullptr);
  for (size_t i = 0; i < bytes; ++i) slot[i] = byteOf(index, i);
  sender.post(bytes, tagOf(index));
}

// Waits for message `index` and checks its envelope and every byte.
const std::byte* expectMessage(FifoReceiver& receiver, uint64_t index, size_t bytes) {
  Envelope got;
  const void* data = nullptr;
  while (!(data = receiver.tryPeek(&got))) std::this_thread::yield();
  REQUIRE(got == Envelope{bytes, tagOf(index)});
  const auto* p = static_cast<const std::byte*>(data);
  for (size_t i = 0; i < bytes; ++i) REQUIRE(p[i] == byteOf(index, i));
  return p;
}

}  // namespace

TEST_CASE(
    "shm fifo: a payload of up to kInlineBytes rides in the header line, larger ones in the slot",
    "[transport][shm]") {
  FifoMemory memory;
  FifoSender sender(memory.base.get(), memory.layout, "rank 1");
  FifoReceiver receiver(memory.base.get(), memory.layout, "rank 0");
  Envelope got;
  CHECK(receiver.tryPeek(&got) == nullptr);  // zeroed memory is empty
  const std::vector<size_t> sizes = {
      0, 1, kInlineBytes - 1, kInlineBytes, kInlineBytes + 1, 64, kSlotBytes, 8, 0};
  for (uint64_t index = 0; index < sizes.size(); ++index) {
    postMessage(sender, index, sizes[index]);
    const std::byte* data = expectMessage(receiver, index, sizes[index]);
    CHECK(memory.inHeaders(data) == (sizes[index] <= kInlineBytes));
    receiver.release();
    CHECK(receiver.tryPeek(&got) == nullptr);
  }
}

TEST_CASE("shm fifo: the sender holds at most `slots` unreleased messages", "[transport][shm]") {
  FifoMemory memory;
  FifoSender sender(memory.base.get(), memory.layout, "rank 1");
  FifoReceiver receiver(memory.base.get(), memory.layout, "rank 0");
  for (uint64_t index = 0; index < kSlots; ++index) postMessage(sender, index, 10 * index);
  CHECK(sender.tryAcquire() == nullptr);
  expectMessage(receiver, 0, 0);
  receiver.release();
  postMessage(sender, kSlots, 40);
  for (uint64_t index = 1; index <= kSlots; ++index) {
    expectMessage(receiver, index, 10 * index);
    receiver.release();
  }
}

TEST_CASE("shm fifo: a header announcing another message than the next reads as not yet there",
          "[transport][shm]") {
  FifoMemory memory;
  FifoReceiver receiver(memory.base.get(), memory.layout, "rank 0");
  auto* headers = reinterpret_cast<SlotHeader*>(memory.base.get() + FifoLayout::kHeadersOffset);
  Envelope got;
  for (const uint64_t posted : {uint64_t{2}, uint64_t{1} + kSlots, ~uint64_t{0}}) {
    headers[0].posted = posted;
    CHECK(receiver.tryPeek(&got) == nullptr);
  }
  headers[0].posted = 1;  // message 0, zero bytes
  CHECK(receiver.tryPeek(&got) != nullptr);
}

TEST_CASE("shm fifo: a producer thread and a consumer thread agree on every byte",
          "[transport][shm]") {
  FifoMemory memory;
  FifoSender sender(memory.base.get(), memory.layout, "rank 1");
  FifoReceiver receiver(memory.base.get(), memory.layout, "rank 0");
  constexpr uint64_t kMessages = 20000;
  std::vector<size_t> sizes(kMessages);
  std::mt19937_64 random(20261204);
  // Mostly sizes around the inline limit, where the payload's place changes.
  for (size_t& s : sizes)
    s = random() % 4 == 0 ? random() % (kSlotBytes + 1) : random() % (2 * kInlineBytes);
  std::thread producer([&] {
    for (uint64_t index = 0; index < kMessages; ++index) {
      std::byte* slot = nullptr;
      while (!(slot = static_cast<std::byte*>(sender.tryAcquire()))) std::this_thread::yield();
      for (size_t i = 0; i < sizes[index]; ++i) slot[i] = byteOf(index, i);
      sender.post(sizes[index], tagOf(index));
    }
  });
  for (uint64_t index = 0; index < kMessages; ++index) {
    expectMessage(receiver, index, sizes[index]);
    receiver.release();
  }
  producer.join();
}

}  // namespace tutti::transport::shm
