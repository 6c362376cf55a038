// The planner's last pick per collective, with the size it was made for. Programs call the same
// sizes again and again (a training loop's buckets, a benchmark's sweep), and pricing every
// algorithm of the table on every call cost 7% of a 2-rank 8-byte all-reduce (0.71 against 0.66
// us, alternated runs on the AMD VM). Everything else the pick depends on -- the tuning table,
// the ranks' shape, their links -- is fixed for a communicator's life; TUTTI_ALGO's forced choice
// (tutti_comm_set_algorithm may change it) is looked at before the memo, so nothing ever needs
// forgetting. One per communicator, whose operations run one at a time.
#pragma once

#include <array>
#include <cstddef>

namespace tutti::runtime {

enum class Collective;
struct Algorithm;

class PickMemo {
 public:
  static constexpr size_t kCollectives = 6;

  // The pick made for `collective` at `bytes`, or nullptr when the last one was for another size.
  const Algorithm* find(Collective collective, size_t bytes) const {
    const Pick& last = last_[static_cast<size_t>(collective)];
    return last.bytes == bytes ? last.algorithm : nullptr;
  }
  void remember(Collective collective, size_t bytes, const Algorithm& algorithm) {
    last_[static_cast<size_t>(collective)] = {bytes, &algorithm};
  }

 private:
  struct Pick {
    size_t bytes = 0;
    const Algorithm* algorithm = nullptr;
  };
  std::array<Pick, kCollectives> last_{};
};

}  // namespace tutti::runtime
