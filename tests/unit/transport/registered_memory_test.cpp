// Registered memory (transport/peer_memory.hpp, allocateRegistered) and the registry behind it:
// zeroed page-aligned memory whose ranges are found again with their offsets, and a second
// mapping of it through /proc/<pid>/fd, as a peer's PeerMemory opens it, shows the same bytes;
// a range past the allocation or a file that is not the one described is not mapped.
#include "transport/peer_memory/registered_memory.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>

using namespace tutti::transport;

TEST_CASE("registered memory is zeroed, page-aligned and found again with its offset") {
  void* memory = allocateRegistered(10000);
  REQUIRE(memory != nullptr);
  CHECK(reinterpret_cast<uintptr_t>(memory) % static_cast<uintptr_t>(sysconf(_SC_PAGESIZE)) == 0);
  auto* bytes = static_cast<unsigned char*>(memory);
  for (size_t i = 0; i < 10000; ++i) REQUIRE(bytes[i] == 0);
  std::memset(bytes, 0xab, 10000);

  const auto whole = findRegistered(bytes, 10000);
  REQUIRE(whole);
  CHECK(whole->offset == 0);
  CHECK(whole->allocationBytes >= 10000);
  const auto inner = findRegistered(bytes + 123, 4000);
  REQUIRE(inner);
  CHECK(inner->offset == 123);
  CHECK(inner->id == whole->id);
  // Past its end, partly outside, or not registered at all.
  CHECK_FALSE(findRegistered(bytes + whole->allocationBytes - 8, 16));
  int onStack = 0;
  CHECK_FALSE(findRegistered(&onStack, sizeof onStack));

  // What a peer does: the same memory through /proc/<pid>/fd, at the range's offset. The reader
  // says it is another process, so it maps rather than use the address.
  const MemoryOffer owner = PeerMemory::offer(false, bytes + 123, 4000, nullptr, 0);
  REQUIRE(owner.send.registered);
  MemoryOffer reader = owner;
  reader.process.nonce[0] ^= 1;
  REQUIRE(reachOf(reader, owner, owner.send) == BufferReach::kMapping);
  PeerMemory peers;
  const auto again = peers.open(1, getpid(), reader, owner, owner.send, 4000);
  REQUIRE(again);
  REQUIRE(again->local != nullptr);
  CHECK(static_cast<void*>(again->local) != bytes + 123);  // a mapping of its own
  CHECK(std::to_integer<int>(again->local[0]) == 0xab);
  bytes[123] = 0x11;
  CHECK(std::to_integer<int>(again->local[0]) == 0x11);
  // Past the end.
  CHECK_FALSE(peers.open(1, getpid(), reader, owner, owner.send, whole->allocationBytes));

  // Another file under the same descriptor number (or another process): not mapped.
  BufferOffer forged = owner.send;
  forged.range.inode += 1;
  forged.range.id += 1;
  CHECK_FALSE(peers.open(2, getpid(), reader, owner, forged, 16));

  freeRegistered(memory);
  CHECK_FALSE(findRegistered(bytes, 1));
}
