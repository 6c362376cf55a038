// Copies through the kernel from another process (what the direct algorithms do with ordinary
// buffers): a forked child's bytes are read exactly, its identity is recognised and a wrong one
// is not, and ranges the child does not have, or a child that is gone, give the kernel's error
// instead of a crash.
#include "transport/peer_memory/cross_memory.hpp"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdint>
#include <random>
#include <vector>

using namespace tutti::transport;

namespace {

std::vector<uint8_t> pattern(size_t bytes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> data(bytes);
  for (uint8_t& byte : data) byte = static_cast<uint8_t>(rng());
  return data;
}

uint64_t addressOf(const void* data) {
  return reinterpret_cast<uint64_t>(data);
}

// A child that holds a copy of the parent's memory until told to exit.
class Child {
 public:
  Child() {
    REQUIRE(pipe(pipe_) == 0);
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      char go = 0;
      while (read(pipe_[0], &go, 1) < 0 && errno == EINTR) {
      }
      _exit(0);
    }
  }
  pid_t pid() const { return pid_; }
  void finish() {
    const char go = 1;
    REQUIRE(write(pipe_[1], &go, 1) == 1);
    int status = 0;
    REQUIRE(waitpid(pid_, &status, 0) == pid_);
    close(pipe_[0]);
    close(pipe_[1]);
  }

 private:
  int pipe_[2] = {-1, -1};
  pid_t pid_ = -1;
};

}  // namespace

TEST_CASE("the kernel copies a child's memory byte for byte") {
  const size_t bytes = (3 << 20) + 4099;  // several pages, not a multiple of one
  std::vector<uint8_t> source = pattern(bytes, 1);
  thisProcess();  // the child inherits the identity at the same address
  Child child;
  // Ours changes; the child's copy at the same address does not.
  const std::vector<uint8_t> forked = source;
  source.assign(bytes, 0);

  std::vector<uint8_t> seen(bytes, 0);
  REQUIRE(readCrossMemory(child.pid(), seen.data(), addressOf(source.data()), bytes) == 0);
  CHECK(seen == forked);
  CHECK(crossMemoryReaches(child.pid(), thisProcess()));
  ProcessIdentity other = thisProcess();
  other.nonce[5] ^= 1;
  CHECK_FALSE(crossMemoryReaches(child.pid(), other));
  child.finish();

  // Gone: the kernel says so, nothing is copied.
  std::vector<uint8_t> after(16, 7);
  CHECK(readCrossMemory(child.pid(), after.data(), addressOf(source.data()), 16) == ESRCH);
  CHECK(after == std::vector<uint8_t>(16, 7));
  CHECK_FALSE(crossMemoryReaches(child.pid(), thisProcess()));
}

TEST_CASE("ranges the peer does not have mapped fail with EFAULT") {
  const long page = sysconf(_SC_PAGESIZE);
  // Two pages, the second unmapped before the fork: a range across both starts in memory.
  auto* pages =
      static_cast<uint8_t*>(mmap(nullptr, static_cast<size_t>(2 * page), PROT_READ | PROT_WRITE,
                                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  REQUIRE(pages != MAP_FAILED);
  REQUIRE(munmap(pages + page, static_cast<size_t>(page)) == 0);
  Child child;

  std::vector<uint8_t> seen(static_cast<size_t>(2 * page));
  CHECK(readCrossMemory(child.pid(), seen.data(), addressOf(pages + page / 2),
                        static_cast<size_t>(page)) == EFAULT);
  CHECK(readCrossMemory(child.pid(), seen.data(), 8, 8) == EFAULT);
  child.finish();
  munmap(pages, static_cast<size_t>(page));
}
