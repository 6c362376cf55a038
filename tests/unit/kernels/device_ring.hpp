// A ring of "GPUs" made of CPU threads, for the device protocol's tests: every rank's FIFOs in
// plain host memory, one thread per rank per channel standing in for a thread block, running the
// very code the CUDA kernel runs (kernels/device/ring_allreduce.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "kernels/device/group.hpp"
#include "kernels/device/ll.hpp"
#include "kernels/device/ring_allreduce.hpp"
#include "kernels/device/simple.hpp"
#include "tests/unit/kernels/host_team.hpp"

namespace tutti::kernels::test {

class DeviceRing {
 public:
  DeviceRing(int nranks, int nchannels, uint32_t nslots, uint32_t slotBytes)
      : nranks_(nranks), nchannels_(nchannels), nslots_(nslots), slotBytes_(slotBytes) {
    for (int i = 0; i < nranks * nchannels; ++i) {
      fifos_.push_back(std::make_unique<FifoMemory>(size_t{nslots} * slotBytes / sizeof(Line)));
    }
  }

  // The FIFO from rank `from` to rank from + 1 on `channel`.
  device::Fifo fifo(int channel, int from) {
    FifoMemory& m = *fifos_[static_cast<size_t>(channel * nranks_ + from)];
    return {&m.head, &m.tail, reinterpret_cast<unsigned char*>(m.slots.data()), nslots_,
            slotBytes_};
  }

  // Slots published into `fifo`: how far it has come, wrap-arounds included.
  uint64_t published(const device::Fifo& f) const { return device::sentSoFar(f); }

  // Sets the abort flag, as the host does when a peer dies or a timeout expires.
  void abort() {
    ::cuda::atomic_ref<uint32_t, ::cuda::thread_scope_system>(abortFlag_)
        .store(1, ::cuda::std::memory_order_relaxed);
  }
  void setSpinBudget(uint64_t spins) { spinBudget_ = spins; }

  // Threads per rank and channel: 1 runs device::HostGroup, more a HostTeam (a block's threads).
  void setTeamSize(int threads) { teamSize_ = threads; }
  int teamSize() const { return teamSize_; }

  // ringAllReduce<Proto, T, Op> on every rank but `absent` (one that never shows up), teamSize()
  // threads per rank and channel; whileRunning runs on the calling thread once they are started.
  // Returns every thread's status, [(rank * nchannels + channel) * teamSize + thread] (kOk for
  // the absent rank).
  template <typename Proto, typename T, typename Op>
  std::vector<device::Status> allReduce(const std::vector<const T*>& src,
                                        const std::vector<T*>& dst, size_t count, int absent = -1,
                                        const std::function<void()>& whileRunning = {}) {
    std::vector<device::Status> status(static_cast<size_t>(nranks_ * nchannels_ * teamSize_),
                                       device::Status::kOk);
    std::vector<std::unique_ptr<HostTeam>> teams;
    std::vector<std::thread> threads;
    for (int r = 0; r < nranks_; ++r) {
      if (r == absent) continue;
      for (int c = 0; c < nchannels_; ++c) {
        const device::RingArgs<T> args{src[r],     dst[r],
                                       count,      nranks_,
                                       r,          c,
                                       nchannels_, fifo(c, (r + nranks_ - 1) % nranks_),
                                       fifo(c, r), {&abortFlag_, spinBudget_}};
        device::Status* out = &status[static_cast<size_t>((r * nchannels_ + c) * teamSize_)];
        if (teamSize_ == 1) {
          threads.emplace_back([args, out] {
            *out = device::ringAllReduce<Proto, T, Op>(device::HostGroup{}, args);
          });
          continue;
        }
        teams.push_back(std::make_unique<HostTeam>(teamSize_));
        for (int m = 0; m < teamSize_; ++m) {
          threads.emplace_back([args, out = out + m, member = teams.back()->member(m)] {
            *out = device::ringAllReduce<Proto, T, Op>(member, args);
          });
        }
      }
    }
    if (whileRunning) whileRunning();
    for (auto& t : threads) t.join();
    return status;
  }

 private:
  struct alignas(16) Line {
    unsigned char bytes[16];
  };
  // Counters on cache lines of their own, as the GPU layout will have them.
  struct FifoMemory {
    explicit FifoMemory(size_t lines) : slots(lines) {}
    alignas(128) uint64_t head = 0;
    alignas(128) uint64_t tail = 0;
    std::vector<Line> slots;
  };

  int nranks_;
  int nchannels_;
  uint32_t nslots_;
  uint32_t slotBytes_;
  std::vector<std::unique_ptr<FifoMemory>> fifos_;
  uint32_t abortFlag_ = 0;
  // Far more polls than any wait here needs, even on a loaded machine: a protocol bug fails its
  // test as kTimedOut instead of hanging it.
  uint64_t spinBudget_ = uint64_t{1} << 24;
  int teamSize_ = 1;
};

}  // namespace tutti::kernels::test
