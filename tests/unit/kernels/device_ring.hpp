// "GPUs" made of CPU threads, for the device protocol's tests: every rank's FIFOs, a ring's and a
// binary tree's (a heap: 0 the root), in plain host memory, one thread per rank per channel (or a
// team of threads, a block's) standing in for a thread block, running the very schedules the
// CUDA kernels run (kernels/device/).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "kernels/device/chain_broadcast.hpp"
#include "kernels/device/chain_reduce.hpp"
#include "kernels/device/ll.hpp"
#include "kernels/device/ring_allgather.hpp"
#include "kernels/device/ring_allreduce.hpp"
#include "kernels/device/ring_reduce_scatter.hpp"
#include "kernels/device/simple.hpp"
#include "kernels/device/tree_allreduce.hpp"
#include "tests/unit/kernels/host_team.hpp"
#include "tests/unit/kernels/model.hpp"

namespace tutti::kernels::test {

enum class Algorithm { kRing, kTree };  // all-reduce's; the other collectives run on the ring

class DeviceRing {
 public:
  DeviceRing(int nranks, int nchannels, uint32_t nslots, uint32_t slotBytes)
      : nranks_(nranks), nchannels_(nchannels), nslots_(nslots), slotBytes_(slotBytes) {
    // Per channel: the ring's FIFO from each rank, then each rank's up and down tree FIFOs.
    for (int i = 0; i < 3 * nranks * nchannels; ++i) {
      fifos_.push_back(std::make_unique<FifoMemory>(size_t{nslots} * slotBytes / sizeof(Line)));
    }
  }

  // The rings' ranks in ring order (each a permutation of 0..nranks-1), as the runtime plans them:
  // channel c runs orders[c % orders.size()]. Rank order until set.
  void setOrders(std::vector<std::vector<int>> orders) {
    orders_ = std::move(orders);
    positions_.clear();
    for (const std::vector<int>& order : orders_) {
      std::vector<int>& positions = positions_.emplace_back(order.size(), 0);
      for (size_t p = 0; p < order.size(); ++p) positions[static_cast<size_t>(order[p])] = int(p);
    }
  }
  int positionOf(int channel, int rank) const {
    return orders_.empty() ? rank : positions_[ringOf(channel)][static_cast<size_t>(rank)];
  }

  // The FIFO from ring position `from` to from + 1 on `channel`: the one the receiver reads.
  device::Fifo fifo(int channel, int from) { return fifoAt(channel * nranks_ + from); }

  // Splits the link from ring position `from` to the next into two FIFOs per channel, the sender's
  // (sendingFifo) and the receiver's (fifo), as a link between hosts is: something else, a proxy,
  // must move the slots from one to the other.
  void splitLink(int from) {
    split_[from] = static_cast<int>(fifos_.size());
    for (int c = 0; c < nchannels_; ++c)
      fifos_.push_back(std::make_unique<FifoMemory>(size_t{nslots_} * slotBytes_ / sizeof(Line)));
  }
  // The FIFO position `from` sends into on `channel`: fifo(), unless the link is split.
  device::Fifo sendingFifo(int channel, int from) {
    const auto it = split_.find(from);
    return it == split_.end() ? fifo(channel, from) : fifoAt(it->second + channel);
  }

  // Slots published into `fifo`: how far it has come, wrap-arounds included.
  uint64_t published(const device::Fifo& f) const { return device::sentSoFar(f); }

  // Sets the abort flag, as the host does when a peer dies or a timeout expires.
  void abort() {
    ::cuda::atomic_ref<uint32_t, ::cuda::thread_scope_system>(abortFlag_)
        .store(1, ::cuda::std::memory_order_relaxed);
  }
  void setSpinBudget(uint64_t spins) { spinBudget_ = spins; }

  // Threads per rank and channel, a HostTeam (a block's threads). One group type whatever the
  // size, a team of one included: each group type instantiates every schedule for every dtype x
  // op again, minutes of compile time (device::HostGroup runs in the CPU stand-in driver).
  void setTeamSize(int threads) { teamSize_ = threads; }
  int teamSize() const { return teamSize_; }

  // `collective` (over `algorithm` for all-reduce) on every rank but `absent` (one that never
  // shows up), teamSize() threads per rank and channel; whileRunning runs on the calling thread
  // once they are started. Reduce-scatter and allgather take the C API's count (one rank's
  // block); allgather and broadcast run on bytes, as the kernels do. Returns every thread's
  // status, [(rank * nchannels + channel) * teamSize + thread] (kOk for the absent rank).
  template <typename Proto, typename T, typename Op>
  std::vector<device::Status> run(Collective collective, Algorithm algorithm,
                                  const std::vector<const T*>& src, const std::vector<T*>& dst,
                                  size_t count, int root = 0, int absent = -1,
                                  const std::function<void()>& whileRunning = {}) {
    auto schedule = [&](const auto& group, int r, int c) {
      const device::RingArgs<T> ring = ringArgs(r, c, src[r], dst[r], count, root);
      switch (collective) {
        case Collective::kAllReduce:
          if (algorithm == Algorithm::kTree) {
            const device::TreeArgs<T> tree{src[r],     dst[r],          count,   c,
                                           nchannels_, treeLinks(c, r), signal()};
            return device::treeAllReduce<Proto, T, Op>(group, tree);
          }
          return device::ringAllReduce<Proto, T, Op>(group, ring);
        case Collective::kReduceScatter:
          return device::ringReduceScatter<Proto, T, Op>(group, ring);
        case Collective::kAllGather:
          return device::ringAllGather<Proto, unsigned char>(group, asBytes(ring));
        case Collective::kBroadcast:
          return device::chainBroadcast<Proto, unsigned char>(group, asBytes(ring));
        case Collective::kReduce: return device::chainReduce<Proto, T, Op>(group, ring);
      }
      return device::Status::kOk;
    };
    return launch(schedule, absent, whileRunning);
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

  device::Fifo fifoAt(int index) {
    FifoMemory& m = *fifos_[static_cast<size_t>(index)];
    return {&m.head, &m.tail, reinterpret_cast<unsigned char*>(m.slots.data()), nslots_,
            slotBytes_};
  }
  // The tree FIFO between `child` and its parent, up (child to parent) or down.
  device::Fifo treeFifo(int channel, int child, bool up) {
    return fifoAt(nranks_ * nchannels_ + 2 * (channel * nranks_ + child) + (up ? 0 : 1));
  }

  device::AbortSignal signal() { return {&abortFlag_, spinBudget_}; }
  size_t ringOf(int channel) const { return static_cast<size_t>(channel) % orders_.size(); }

  template <typename T>
  // Rank r's part on channel c; root is a rank, as the C API's.
  device::RingArgs<T> ringArgs(int r, int c, const T* src, T* dst, size_t count, int root) {
    const int p = positionOf(c, r);
    return {src,
            dst,
            count,
            nranks_,
            p,
            positionOf(c, root),
            orders_.empty() ? nullptr : orders_[ringOf(c)].data(),
            c,
            nchannels_,
            fifo(c, (p + nranks_ - 1) % nranks_),
            sendingFifo(c, p),
            signal()};
  }

  template <typename T>
  static device::RingArgs<unsigned char> asBytes(const device::RingArgs<T>& a) {
    return {reinterpret_cast<const unsigned char*>(a.src),
            reinterpret_cast<unsigned char*>(a.dst),
            a.count * sizeof(T),
            a.nranks,
            a.position,
            a.root,
            a.ranks,
            a.channel,
            a.nchannels,
            a.fromPrev,
            a.toNext,
            a.signal};
  }

  device::TreeLinks treeLinks(int channel, int position) {
    // A binary heap: 0 the root, i's children 2i+1 and 2i+2.
    device::TreeLinks links{};
    links.hasParent = position > 0;
    if (links.hasParent) {
      links.toParent = treeFifo(channel, position, true);
      links.fromParent = treeFifo(channel, position, false);
    }
    for (int child = 2 * position + 1; child <= 2 * position + 2 && child < nranks_; ++child) {
      links.fromChildren[links.nchildren] = treeFifo(channel, child, true);
      links.toChildren[links.nchildren++] = treeFifo(channel, child, false);
    }
    return links;
  }

  // schedule(group, rank, channel) on every rank but `absent`, teamSize() threads per rank and
  // channel.
  template <typename Schedule>
  std::vector<device::Status> launch(const Schedule& schedule, int absent,
                                     const std::function<void()>& whileRunning) {
    std::vector<device::Status> status(static_cast<size_t>(nranks_ * nchannels_ * teamSize_),
                                       device::Status::kOk);
    std::vector<std::unique_ptr<HostTeam>> teams;
    std::vector<std::thread> threads;
    for (int r = 0; r < nranks_; ++r) {
      if (r == absent) continue;
      for (int c = 0; c < nchannels_; ++c) {
        device::Status* out = &status[static_cast<size_t>((r * nchannels_ + c) * teamSize_)];
        teams.push_back(std::make_unique<HostTeam>(teamSize_));
        for (int m = 0; m < teamSize_; ++m) {
          threads.emplace_back([&schedule, r, c, out = out + m, member = teams.back()->member(m)] {
            *out = schedule(member, r, c);
          });
        }
      }
    }
    if (whileRunning) whileRunning();
    for (auto& t : threads) t.join();
    return status;
  }

  int nranks_;
  int nchannels_;
  uint32_t nslots_;
  uint32_t slotBytes_;
  std::vector<std::unique_ptr<FifoMemory>> fifos_;
  std::map<int, int> split_;  // a split link's sender: the index of its first sending FIFO
  std::vector<std::vector<int>> orders_;     // [ring][position]: the rank there; none: rank order
  std::vector<std::vector<int>> positions_;  // [ring][rank]: its position
  uint32_t abortFlag_ = 0;
  // Far more polls than any wait here needs, even on a loaded machine: a protocol bug fails its
  // test as kTimedOut instead of hanging it.
  uint64_t spinBudget_ = uint64_t{1} << 24;
  int teamSize_ = 1;
};

}  // namespace tutti::kernels::test
