// The device protocol's way out of a wait that cannot end: one rank never shows up, and the
// others return the abort status once the host sets the abort flag, or the timeout status once
// their spin budget is spent, instead of spinning forever.
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

// Every present rank's every channel ended with `want`.
void checkPresentRanks(const std::vector<device::Status>& status, device::Status want) {
  for (int r = 0; r < kRanks; ++r) {
    if (r == kAbsent) continue;
    for (int c = 0; c < kChannels; ++c) {
      INFO("rank " << r << " channel " << c);
      CHECK(status[static_cast<size_t>(r * kChannels + c)] == want);
    }
  }
}

TEMPLATE_TEST_CASE("device protocol: the abort flag ends every wait", "", device::Simple,
                   device::LL) {
  DeviceRing ring(kRanks, kChannels, 4, 64);  // its spin budget: a broken abort times out
  checkPresentRanks(runWithoutOneRank<TestType>(ring, true), device::Status::kAborted);
}

TEMPLATE_TEST_CASE("device protocol: a spent spin budget ends every wait", "", device::Simple,
                   device::LL) {
  DeviceRing ring(kRanks, kChannels, 4, 64);
  ring.setSpinBudget(4 * device::kSpinsBetweenChecks);
  checkPresentRanks(runWithoutOneRank<TestType>(ring, false), device::Status::kTimedOut);
}

}  // namespace
}  // namespace tutti::kernels::test
