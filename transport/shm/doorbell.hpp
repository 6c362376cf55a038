// A doorbell: one 32-bit word in memory both sides map, through which a waiter that stops
// spinning sleeps in the kernel (a futex) until the other side has moved, instead of waking on a
// timer to poll. On 2 cores that also run the application's own threads (DDP's backward), a
// polling waiter gets the core back only when the scheduler's slice ends; a rung doorbell wakes it
// at once, and it costs no CPU until then.
//
// The waiter raises the word, looks once more at what it waits for, then sleeps while the word
// is raised; the other side publishes, then lowers the word and wakes the sleeper if it was
// raised. Both sides put a full fence between their store and their load (Dekker), so either the
// waiter sees the publication or the publisher sees the raised word: no wake-up is lost. The
// word is the peer's to write too: any value it leaves there only ends a sleep early or lets it
// run to its limit.
#pragma once

#include <atomic>
#include <cstdint>

namespace tutti::transport::shm {

class Doorbell {
 public:
  explicit Doorbell(uint32_t* word) : word_(word) {}

  // Sleeps for at most `ns` unless `arrived()` already holds; ends early when the other side
  // rings.
  template <typename Arrived>
  void sleep(long ns, Arrived arrived) {
    flag().store(1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!arrived()) wait(ns);
    flag().store(0, std::memory_order_relaxed);
  }

  // Called after publishing (a release store of a FIFO counter).
  void ring() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (flag().load(std::memory_order_relaxed) != 0) wake();
  }

 private:
  std::atomic_ref<uint32_t> flag() const { return std::atomic_ref<uint32_t>(*word_); }
  void wait(long ns);  // futex wait while the word is 1
  void wake();         // lowers the word, then wakes its sleeper

  uint32_t* word_;
};

}  // namespace tutti::transport::shm
