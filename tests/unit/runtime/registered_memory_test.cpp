// tutti_mem_alloc / tutti_mem_free and the registry behind them: zeroed page-aligned memory whose
// ranges are found again with their offsets, a second mapping of it through /proc/<pid>/fd shows
// the same bytes (what a peer does), and bad arguments fail with messages that name them.
#include "runtime/memory/registered_memory.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>

#include "runtime/memory/peer_buffers.hpp"
#include "tests/warnings.hpp"
#include "tutti/tutti.h"

using Catch::Matchers::Contains;
using tutti::runtime::findRegistered;
using tutti::runtime::PeerBuffers;

TEST_CASE("registered memory is zeroed, page-aligned and found again with its offset") {
  void* memory = nullptr;
  REQUIRE(tutti_mem_alloc(&memory, 10000) == tuttiSuccess);
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

  // What a peer does: the same memory through /proc/<pid>/fd, at the range's offset.
  PeerBuffers peers;
  std::byte* again = peers.map(1, getpid(), *inner, 4000);
  REQUIRE(again != nullptr);
  CHECK(std::to_integer<int>(again[0]) == 0xab);
  bytes[123] = 0x11;
  CHECK(std::to_integer<int>(again[0]) == 0x11);
  CHECK(peers.map(1, getpid(), *inner, whole->allocationBytes) == nullptr);  // past the end

  // Another file under the same descriptor number (or another process): not mapped.
  auto forged = *inner;
  forged.inode += 1;
  forged.id += 1;
  CHECK(peers.map(2, getpid(), forged, 16) == nullptr);

  REQUIRE(tutti_mem_free(memory) == tuttiSuccess);
  CHECK_FALSE(findRegistered(bytes, 1));
}

TEST_CASE("registered memory: bad arguments are errors that name them") {
  tutti::tests::Warnings warnings;
  warnings.expect();  // the allocation larger than the host's memory is also a warning
  void* memory = nullptr;
  CHECK(tutti_mem_alloc(&memory, 0) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("bytes is 0"));
  CHECK(memory == nullptr);
  CHECK(tutti_mem_alloc(nullptr, 64) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("ptr is NULL"));
  CHECK(tutti_mem_alloc(&memory, SIZE_MAX) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("more than a file can hold"));
  CHECK(memory == nullptr);
  CHECK(tutti_mem_alloc(&memory, size_t{1} << 50) == tuttiSystemError);
  CHECK_THAT(tutti_get_last_error(), Contains("more than this host's memory"));
  CHECK(memory == nullptr);
  CHECK(warnings.count({"more than this host's memory"}) == 1);

  CHECK(tutti_mem_free(nullptr) == tuttiSuccess);
  int onStack = 0;
  CHECK(tutti_mem_free(&onStack) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("not the start of memory from tutti_mem_alloc"));
  REQUIRE(tutti_mem_alloc(&memory, 64) == tuttiSuccess);
  CHECK(tutti_mem_free(static_cast<char*>(memory) + 8) == tuttiInvalidArgument);
  CHECK(tutti_mem_free(memory) == tuttiSuccess);
  CHECK(tutti_mem_free(memory) == tuttiInvalidArgument);  // twice
}
