// The device protocol's way out of a wait that cannot end: one rank never shows up, and the
// others (every thread of a block-like team too) return the abort status once the host sets the
// abort flag, or the timeout status once their spin budget is spent, instead of spinning forever;
// in every schedule (ring all-reduce, reduce-scatter, allgather, broadcast and reduce chains,
// tree all-reduce: rank 2 is a leaf under the root, so the whole tree waits for it).
#include <catch2/catch.hpp>
#include <vector>

#include "kernels/ops.hpp"
#include "tests/unit/kernels/device_ring.hpp"

namespace tutti::kernels::test {
namespace {

constexpr int kRanks = 4;
constexpr int kChannels = 2;
constexpr int kAbsent = 2;
constexpr size_t kCount = 5000;  // far more than the FIFOs hold: every present rank gets stuck

struct Schedule {
  Collective collective;
  Algorithm algorithm;
};
constexpr Schedule kSchedules[] = {
    {Collective::kAllReduce, Algorithm::kRing}, {Collective::kReduceScatter, Algorithm::kRing},
    {Collective::kAllGather, Algorithm::kRing}, {Collective::kBroadcast, Algorithm::kRing},
    {Collective::kReduce, Algorithm::kRing},    {Collective::kAllReduce, Algorithm::kTree}};

template <typename Proto>
std::vector<device::Status> runWithoutOneRank(DeviceRing& ring, Schedule s,
                                              bool abortWhileRunning) {
  // Room for every layout: reduce-scatter's sources and allgather's outputs hold kRanks blocks.
  std::vector<std::vector<float>> src(kRanks, std::vector<float>(kRanks * kCount, 1.0f));
  std::vector<std::vector<float>> dst(kRanks, std::vector<float>(kRanks * kCount));
  std::vector<const float*> srcs;
  std::vector<float*> dsts;
  for (int r = 0; r < kRanks; ++r) {
    srcs.push_back(src[r].data());
    dsts.push_back(dst[r].data());
  }
  return ring.run<Proto, float, OpSum>(s.collective, s.algorithm, srcs, dsts, kCount, 0, kAbsent,
                                       [&] {
                                         if (abortWhileRunning) ring.abort();
                                       });
}

// Every thread of every present rank's every channel ended with `want`.
void checkPresentRanks(const DeviceRing& ring, const std::vector<device::Status>& status,
                       device::Status want) {
  const int team = ring.teamSize();
  for (int r = 0; r < kRanks; ++r) {
    if (r == kAbsent) continue;
    for (int c = 0; c < kChannels; ++c) {
      for (int m = 0; m < team; ++m) {
        INFO("rank " << r << " channel " << c << " thread " << m);
        CHECK(status[static_cast<size_t>((r * kChannels + c) * team + m)] == want);
      }
    }
  }
}

TEMPLATE_TEST_CASE("device protocol: the abort flag ends every wait", "", device::Simple,
                   device::LL) {
  for (const Schedule s : kSchedules) {
    for (const int team : {1, 3}) {
      INFO(collectiveName(s.collective)
           << (s.algorithm == Algorithm::kTree ? " (tree)" : "") << " team " << team);
      DeviceRing ring(kRanks, kChannels, 4, 64);  // its spin budget: a broken abort times out
      ring.setTeamSize(team);
      checkPresentRanks(ring, runWithoutOneRank<TestType>(ring, s, true), device::Status::kAborted);
    }
  }
}

TEMPLATE_TEST_CASE("device protocol: a spent spin budget ends every wait", "", device::Simple,
                   device::LL) {
  for (const Schedule s : kSchedules) {
    INFO(collectiveName(s.collective) << (s.algorithm == Algorithm::kTree ? " (tree)" : ""));
    DeviceRing ring(kRanks, kChannels, 4, 64);
    ring.setSpinBudget(4 * device::kSpinsBetweenChecks);
    checkPresentRanks(ring, runWithoutOneRank<TestType>(ring, s, false), device::Status::kTimedOut);
  }
}

}  // namespace
}  // namespace tutti::kernels::test
