#include "transport/shm/doorbell.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>

namespace tutti::transport::shm {

// Not FUTEX_PRIVATE_FLAG: the word lives in memory that another process maps.
void Doorbell::wait(long ns) {
  const timespec limit{ns / 1'000'000'000, ns % 1'000'000'000};
  syscall(SYS_futex, word_, FUTEX_WAIT, 1, &limit, nullptr, 0);
}

void Doorbell::wake() {
  if (flag().exchange(0, std::memory_order_relaxed) != 0)
    syscall(SYS_futex, word_, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace tutti::transport::shm
