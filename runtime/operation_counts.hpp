// What a communicator counts of the operations issued on it: every operation's sequence number,
// the collectives apart (which every rank agrees on), and where the next receive from any source
// starts looking. One thread issues a communicator's operations; a dump may read the counts from
// another, so they are atomic, but need no read-modify-write.
#pragma once

#include <atomic>
#include <cstdint>

namespace tutti::runtime {

class OperationCounts {
 public:
  uint64_t nextSequence() { return advance(sequence_); }
  uint64_t lastSequence() const { return sequence_.load(std::memory_order_relaxed); }
  // Collectives issued so far, counted apart from send/recv, which only some ranks make: the
  // number every rank agrees on for the same call (TUTTI_CHECK_CALLS compares it).
  uint64_t nextCollective() { return advance(collectives_); }
  uint64_t lastCollective() const { return collectives_.load(std::memory_order_relaxed); }
  // The rank a receive from any source looks at first: the one after the rank the last one took
  // from, so that senders whose messages wait together are taken in turn. Operations run one at
  // a time, so only the running one uses it.
  int& anySourceStart() { return anySourceStart_; }

 private:
  static uint64_t advance(std::atomic<uint64_t>& count) {
    const uint64_t next = count.load(std::memory_order_relaxed) + 1;
    count.store(next, std::memory_order_relaxed);
    return next;
  }

  std::atomic<uint64_t> sequence_{0};
  std::atomic<uint64_t> collectives_{0};
  int anySourceStart_ = 0;
};

}  // namespace tutti::runtime
