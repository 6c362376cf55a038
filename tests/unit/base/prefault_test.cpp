// prefault (base/prefault.hpp) against what it promises: memory of random bytes (fixed seed), at
// every alignment and length, holds the same bytes after it, down to ranges shorter than a word
// and ranges that end mid-page; and a thread adding to a word of every page meanwhile (as a
// peer writing into a shared FIFO would) loses none of its additions.
#include "base/prefault.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

using namespace tutti;

namespace {

constexpr uint64_t kSeed = 20261203;

size_t pageBytes() {
  return static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// Fresh pages, never touched before the test (as a FIFO's slots are at connect), between two
// inaccessible guard pages (no merging with a neighbouring mapping) and without huge pages or
// large folios (a fault then backs exactly its own page, which the residency test relies on).
struct FreshPages {
  explicit FreshPages(size_t pages) : bytes(pages * pageBytes()) {
    const size_t page = pageBytes();
    void* p = mmap(nullptr, bytes + 2 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(p != MAP_FAILED);
    guarded = static_cast<std::byte*>(p);
    data = guarded + page;
    REQUIRE(mprotect(data, bytes, PROT_READ | PROT_WRITE) == 0);
    REQUIRE(madvise(data, bytes, MADV_NOHUGEPAGE) == 0);
  }
  ~FreshPages() { munmap(guarded, bytes + 2 * pageBytes()); }
  std::byte* guarded;
  std::byte* data;
  size_t bytes;
};

}  // namespace

TEST_CASE("prefault leaves every byte as it was, at any offset and length") {
  std::mt19937_64 random(kSeed);
  const size_t page = pageBytes();
  FreshPages pages(8);
  std::vector<std::byte> before(pages.bytes);
  for (std::byte& b : before) b = static_cast<std::byte>(random());
  std::memcpy(pages.data, before.data(), pages.bytes);
  const std::vector<size_t> lengths = {0, 1, 3, 4, 5, page - 1, page, page + 3, 3 * page + 7};
  for (size_t trial = 0; trial < 200; ++trial) {
    const size_t length = trial < lengths.size() ? lengths[trial] : random() % (6 * page);
    const size_t offset = random() % (pages.bytes - length + 1);
    prefault(pages.data + offset, length);
    REQUIRE(std::memcmp(pages.data, before.data(), pages.bytes) == 0);
  }
}

TEST_CASE("prefault backs every page of the range and none beyond it") {
  const size_t page = pageBytes();
  FreshPages pages(6);
  // From one word into page 1 to mid page 3 (whose first word lies inside): pages 1 to 3.
  prefault(pages.data + page + 4, 2 * page + page / 2);
  std::vector<unsigned char> resident(6);
  REQUIRE(mincore(pages.data, pages.bytes, resident.data()) == 0);
  CHECK((resident[0] & 1) == 0);
  CHECK((resident[1] & 1) == 1);
  CHECK((resident[2] & 1) == 1);
  CHECK((resident[3] & 1) == 1);
  CHECK((resident[4] & 1) == 0);
  CHECK((resident[5] & 1) == 0);
}

TEST_CASE("prefault loses nothing a concurrent writer adds") {
  const size_t page = pageBytes();
  constexpr size_t kPages = 64;
  constexpr uint32_t kAdds = 2000;
  FreshPages pages(kPages);
  const auto word = [&](size_t p) {
    return std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(pages.data + p * page));
  };
  std::atomic<bool> go{false};
  std::thread writer([&] {
    while (!go.load()) std::this_thread::yield();
    for (uint32_t i = 0; i < kAdds; ++i)
      for (size_t p = 0; p < kPages; ++p) word(p).fetch_add(1, std::memory_order_relaxed);
  });
  go.store(true);
  for (uint32_t i = 0; i < kAdds / 10; ++i) prefault(pages.data, pages.bytes);
  writer.join();
  for (size_t p = 0; p < kPages; ++p) REQUIRE(word(p).load() == kAdds);
}
