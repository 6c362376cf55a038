// kernels/device/wait.hpp: how the device protocol waits, and how a wait ends when it must.
//
// Every wait of the protocol (a free slot, published data, an LL line's flags) goes through
// spinUntil: it polls its condition, backs off between polls (__nanosleep on the GPU, a yield on a
// CPU thread, so that eight ranks' threads on two cores make progress), and every
// kSpinsBetweenChecks polls reads the abort flag the host sets and counts the spin budget. A
// peer that died, a timeout the host decided, or a budget spent turns into a Status returned to
// the schedule, never a kernel spinning forever. The flag is read every so many polls, not every
// poll, because on the GPU it lives in host memory across PCIe (NCCL does the same).
#pragma once

#include <cstdint>
#include <cuda/atomic>
#if !defined(__CUDA_ARCH__)
#include <thread>
#endif

#include "kernels/half.hpp"  // TUTTI_HOST_DEVICE

namespace tutti::kernels::device {

enum class Status : int {
  kOk = 0,
  kAborted = 1,   // the host set the abort flag
  kTimedOut = 2,  // a wait spent its spin budget
};

inline constexpr uint64_t kNoSpinBudget = ~uint64_t{0};
inline constexpr uint64_t kSpinsBetweenChecks = 1024;

// What ends a wait other than its condition: `flag` (nonzero: abort; in memory the host maps and
// writes) and the polls one wait may spend (kNoSpinBudget: unbounded). A budget counts polls, not
// time: the host derives it from its timeout and the back-off.
struct AbortSignal {
  uint32_t* flag;
  uint64_t spinBudget;
};

TUTTI_HOST_DEVICE inline bool abortRequested(const AbortSignal& signal) {
  return ::cuda::atomic_ref<uint32_t, ::cuda::thread_scope_system>(*signal.flag)
             .load(::cuda::std::memory_order_relaxed) != 0;
}

TUTTI_HOST_DEVICE inline void backOff() {
#if defined(__CUDA_ARCH__)
  __nanosleep(64);
#else
  std::this_thread::yield();
#endif
}

// Polls ready() until it returns true (kOk), the abort flag is set (kAborted) or the budget is
// spent (kTimedOut).
template <typename Ready>
TUTTI_HOST_DEVICE Status spinUntil(const AbortSignal& signal, Ready&& ready) {
  for (uint64_t spins = 1;; ++spins) {
    if (ready()) return Status::kOk;
    if (spins % kSpinsBetweenChecks == 0) {
      if (abortRequested(signal)) return Status::kAborted;
      if (spins >= signal.spinBudget) return Status::kTimedOut;
    }
    backOff();
  }
}

}  // namespace tutti::kernels::device
