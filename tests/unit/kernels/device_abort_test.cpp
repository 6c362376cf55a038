// The device protocol's way out of a wait that cannot end: one rank never shows up, and the
// others (every thread of a block-like team too) return the abort status once the host sets the
// abort flag, or the timeout status once their spin budget is spent, instead of spinning forever.
#include <catch2/catch.hpp>
#include <vector>

#include "kernels/ops.hpp"
#include "tests/unit/kernels/device_ring.hpp"

namespace tutti::kernels::test {
namespace {

constexpr int kRanks = 4;
constexpr int kChannels = 2;
constexpr int kAbsent = 2;
constexpr size_t kCount = 5000;

template <typename Proto>
std::vector<device::Status> runWithoutOneRank(DeviceRing& ring, bool abortWhileRunning) {
  std::vector<std::vector<float>> src(kRanks, std::vector<float>(kCount, 1.0f));
  std::vector<std::vector<float>> dst(kRanks, std::vector<float>(kCount));
  std::vector<const float*> srcs;
  std::vector<float*> dsts;
  for (int r = 0; r < kRanks; ++r) {
    srcs.push_back(src[r].data());
    dsts.push_back(dst[r].data());
  }
  return ring.allReduce<Proto, float, OpSum>(srcs, dsts, kCount, kAbsent, [&] {
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
  for (const int team : {1, 3}) {
    DeviceRing ring(kRanks, kChannels, 4, 64);  // its spin budget: a broken abort times out
    ring.setTeamSize(team);
    checkPresentRanks(ring, runWithoutOneRank<TestType>(ring, true), device::Status::kAborted);
  }
}

TEMPLATE_TEST_CASE("device protocol: a spent spin budget ends every wait", "", device::Simple,
                   device::LL) {
  DeviceRing ring(kRanks, kChannels, 4, 64);
  ring.setSpinBudget(4 * device::kSpinsBetweenChecks);
  checkPresentRanks(ring, runWithoutOneRank<TestType>(ring, false), device::Status::kTimedOut);
}

}  // namespace
}  // namespace tutti::kernels::test
