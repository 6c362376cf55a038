// Several CPU threads standing in for the threads of one thread block, so that the primitives'
// striding over units and their barrier-then-thread-0 publication run as on the GPU, where
// ThreadSanitizer can check the ordering argument (docs/gpu.md). agree() is BlockGroup's
// __syncthreads_or: a barrier after which every member knows whether any member failed, and how.
#pragma once

#include <atomic>
#include <barrier>

#include "kernels/device/wait.hpp"

namespace tutti::kernels::test {

class HostTeam {
 public:
  explicit HostTeam(int size) : size_(size), barrier_(size) {}

  class Member {
   public:
    Member(HostTeam* team, int index) : team_(team), index_(index) {}
    int index() const { return index_; }
    int size() const { return team_->size_; }
    device::Status agree(device::Status s) const { return team_->agree(s); }

   private:
    HostTeam* team_;
    int index_;
  };

  Member member(int index) { return {this, index}; }

 private:
  static constexpr int kAbortedBit = 1, kTimedOutBit = 2;

  // A failure is final (the primitives stop at the first), so the bits are never cleared; the
  // second barrier keeps a fast member from reporting its next call's failure to a slow member
  // still reading this call's result.
  device::Status agree(device::Status s) {
    if (s != device::Status::kOk) {
      failures_.fetch_or(s == device::Status::kAborted ? kAbortedBit : kTimedOutBit);
    }
    barrier_.arrive_and_wait();
    const int failures = failures_.load();
    barrier_.arrive_and_wait();
    if ((failures & kAbortedBit) != 0) return device::Status::kAborted;
    return (failures & kTimedOutBit) != 0 ? device::Status::kTimedOut : device::Status::kOk;
  }

  int size_;
  std::barrier<> barrier_;
  std::atomic<int> failures_{0};
};

}  // namespace tutti::kernels::test
