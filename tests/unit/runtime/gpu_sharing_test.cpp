// Ranks sharing a GPU (runtime/gpu/gpu_sharing.hpp): the facts record round trips and refuses
// what a peer could send wrong (kRemote naming both ranks); the plan, against an independent
// search over channel counts on random layouts (fixed seed), and its refusals by name: a GPU that
// processes share without MPS or two ranks of one process share, one that holds less than a channel
// per rank.
#include "runtime/gpu/gpu_sharing.hpp"

#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <vector>

#include "base/byte_codec.hpp"
#include "tests/error_of.hpp"
#include "tests/random_text.hpp"

using namespace tutti;
using namespace tutti::runtime::gpu;
using Catch::Matchers::Contains;
using tutti::tests::randomText;

namespace {

constexpr uint64_t kSeed = 20261202;
// The facts record's version, as gpu_sharing.cpp writes it: the hand-made records below follow it.
constexpr uint32_t kVersion = 4;

GpuFacts gpu(uint8_t id, int residentBlocks, bool mps) {
  GpuFacts facts;
  facts.uuid.fill(id);
  facts.residentBlocks = residentBlocks;
  facts.mps = mps;
  return facts;
}

std::string remoteError(const std::string& bytes) {
  return tests::messageOf(ErrorCode::kRemote, [&] { decodeGpuFacts(bytes, 1, 3); });
}

// Whether `channels` per launch fit: no GPU is shared by two ranks of one process, nor by several
// processes unless all its ranks run under MPS, and every rank on a GPU can count on room for all
// its ranks' channels.
bool fits(const std::vector<GpuFacts>& ranks, const std::vector<RankProcess>& processes,
          int channels) {
  const auto sameGpu = [&](size_t a, size_t b) {
    return ranks[b].uuid == ranks[a].uuid && processes[b].machine == processes[a].machine;
  };
  for (size_t a = 0; a < ranks.size(); ++a) {
    int sharing = 0;
    for (size_t b = 0; b < ranks.size(); ++b) {
      if (!sameGpu(a, b)) continue;
      ++sharing;
      const bool oneProcess =
          processes[b].host == processes[a].host && processes[b].pid == processes[a].pid;
      if (b != a && oneProcess) return false;
      if (!oneProcess && !(ranks[a].mps && ranks[b].mps)) return false;
    }
    for (size_t b = 0; b < ranks.size(); ++b)
      if (sameGpu(a, b) && ranks[b].residentBlocks < channels * sharing) return false;
  }
  return true;
}

// Processes of one host, by pid.
std::vector<RankProcess> onOneHost(std::initializer_list<int64_t> pids) {
  std::vector<RankProcess> processes;
  for (int64_t pid : pids) processes.push_back({"machine-a", "host-a", pid});
  return processes;
}

}  // namespace

TEST_CASE("GPU facts: random records round trip", "[runtime][gpu-sharing]") {
  std::mt19937_64 rng(kSeed);
  INFO("seed " << kSeed);
  for (int trial = 0; trial < 200; ++trial) {
    GpuFacts sent;
    for (uint8_t& byte : sent.uuid) byte = static_cast<uint8_t>(rng());
    sent.residentBlocks = static_cast<int>(rng() % (1 << 20));
    sent.mps = rng() % 2 == 1;
    if (rng() % 2 == 1) sent.unusable = randomText(rng, 200);
    sent.unreachable.resize(rng() % 4);
    for (auto& uuid : sent.unreachable)
      for (uint8_t& byte : uuid) byte = static_cast<uint8_t>(rng());
    sent.busId = randomText(rng, 12);
    const GpuFacts got = decodeGpuFacts(encodeGpuFacts(sent), 0, 1);
    CHECK(got.uuid == sent.uuid);
    CHECK(got.residentBlocks == sent.residentBlocks);
    CHECK(got.mps == sent.mps);
    CHECK(got.unusable == sent.unusable);
    CHECK(got.unreachable == sent.unreachable);
    CHECK(got.busId == sent.busId);
  }
}

TEST_CASE("GPU facts: what a peer sends wrong is refused naming it", "[runtime][gpu-sharing]") {
  GpuFacts withUnreachable = gpu(7, 1056, true);
  withUnreachable.unreachable = {gpu(8, 1, false).uuid, gpu(9, 1, false).uuid};
  const std::string good = encodeGpuFacts(withUnreachable);
  for (size_t length = 0; length < good.size(); ++length)
    CHECK_THAT(remoteError(good.substr(0, length)), Contains("rank 1: rank 3's GPU facts"));
  CHECK_THAT(remoteError(good + "x"), Contains("rank 3's GPU facts"));
  std::string version = good;
  version[0] = 9;
  CHECK_THAT(remoteError(version), Contains("version 9"));
  for (const int blocks : {-1, (1 << 20) + 1}) {
    ByteWriter out;
    out.u32(kVersion).zeros(16).i32(blocks).u8(0).str("").u32(0);
    CHECK_THAT(remoteError(std::string(out.bytes())),
               Contains(std::to_string(blocks) + " resident blocks"));
  }
  ByteWriter flag;
  flag.u32(kVersion).zeros(16).i32(8).u8(2).str("").u32(0);
  CHECK_THAT(remoteError(std::string(flag.bytes())), Contains("MPS flag 2"));
  ByteWriter reason;
  reason.u32(kVersion).zeros(16).i32(8).u8(0).str(std::string(4097, 'x')).u32(0);
  CHECK_THAT(remoteError(std::string(reason.bytes())), Contains("4097"));
  ByteWriter unreachable;
  unreachable.u32(kVersion).zeros(16).i32(8).u8(0).str("").u32(1025);
  CHECK_THAT(remoteError(std::string(unreachable.bytes())), Contains("1025 GPUs out of reach"));
  ByteWriter busId;
  busId.u32(kVersion).zeros(16).i32(8).u8(0).str("").u32(0).str(std::string(65, '0'));
  CHECK_THAT(remoteError(std::string(busId.bytes())), Contains("65"));
}

TEST_CASE("GPU facts: a GPU writes in place to itself and to those it has peer access to",
          "[runtime][gpu-sharing]") {
  GpuFacts a = gpu(1, 8, false), b = gpu(2, 8, false), c = gpu(3, 8, false);
  a.unreachable = {b.uuid};
  CHECK(writesInPlace(a, a));
  CHECK_FALSE(writesInPlace(a, b));
  CHECK(writesInPlace(a, c));
  CHECK(writesInPlace(b, a));  // b's process said nothing against a: the driver decides per pair
  CHECK(writesInPlace(c, b));
}

TEST_CASE("GPU facts: UUIDs read as nvidia-smi writes them", "[runtime][gpu-sharing]") {
  std::array<uint8_t, 16> uuid{};
  for (size_t i = 0; i < uuid.size(); ++i) uuid[i] = static_cast<uint8_t>(0xa0 + i);
  CHECK(uuidText(uuid) == "GPU-a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf");
}

TEST_CASE("kernel plan: channels are what every GPU holds for each of its ranks",
          "[runtime][gpu-sharing]") {
  SECTION("one GPU per rank: the channels asked for, unless a GPU holds fewer") {
    const KernelPlan plan =
        planKernels({gpu(1, 1056, false), gpu(2, 1056, false)}, onOneHost({10, 11}), 8);
    CHECK(plan.declined.empty());
    CHECK(plan.channels == 8);
    CHECK(planKernels({gpu(1, 5, false), gpu(2, 1056, false)}, onOneHost({10, 11}), 8).channels ==
          5);
  }
  SECTION("four processes on one GPU under MPS share its blocks") {
    const std::vector<GpuFacts> ranks(4, gpu(1, 20, true));
    const KernelPlan plan = planKernels(ranks, onOneHost({10, 11, 12, 13}), 8);
    CHECK(plan.declined.empty());
    CHECK(plan.channels == 5);
  }
  SECTION("the fewest blocks any sharer reports counts (MPS clients may be given fewer SMs)") {
    CHECK(planKernels({gpu(1, 64, true), gpu(1, 6, true)}, onOneHost({10, 11}), 8).channels == 3);
  }
  SECTION("the same UUID on two machines is two GPUs, whatever the pids") {
    const KernelPlan plan =
        planKernels({gpu(1, 64, false), gpu(1, 64, false)},
                    {{"machine-a", "host-a", 10}, {"machine-b", "host-b", 10}}, 8);
    CHECK(plan.declined.empty());
    CHECK(plan.channels == 8);
  }
  SECTION("two containers of one machine share its GPU: the same pid is two processes") {
    const KernelPlan plan =
        planKernels({gpu(1, 64, false), gpu(1, 64, false)},
                    {{"machine-a", "host-a", 10}, {"machine-a", "host-b", 10}}, 8);
    CHECK(plan.channels == 0);
    CHECK_THAT(plan.declined, Contains("without MPS"));
  }
  SECTION("ranks of one process on GPUs of their own") {
    const KernelPlan plan =
        planKernels({gpu(1, 64, false), gpu(2, 64, false)}, onOneHost({10, 10}), 8);
    CHECK(plan.declined.empty());
    CHECK(plan.channels == 8);
    CHECK(plan.sharesGpuWithThread == std::vector<bool>{false, false});
  }
}

TEST_CASE("kernel plan: what declines the kernels says why", "[runtime][gpu-sharing]") {
  SECTION("processes sharing a GPU without MPS") {
    const KernelPlan plan = planKernels({gpu(2, 64, true), gpu(1, 64, false), gpu(1, 64, true)},
                                        onOneHost({10, 11, 12}), 8);
    CHECK(plan.channels == 0);
    CHECK_THAT(plan.declined, Contains("ranks 1, 2 share GPU-01010101-0101-0101-0101-010101010101 "
                                       "without MPS"));
    CHECK_THAT(plan.declined, Contains("nvidia-cuda-mps-control -d"));
  }
  SECTION("ranks of one process sharing a GPU, with or without MPS") {
    for (const bool mps : {false, true}) {
      const KernelPlan plan = planKernels({gpu(2, 64, mps), gpu(1, 64, mps), gpu(1, 64, mps)},
                                          onOneHost({10, 11, 11}), 8);
      CHECK(plan.channels == 0);
      CHECK_THAT(plan.declined,
                 Contains("ranks 1, 2 are threads of one process on "
                          "GPU-01010101-0101-0101-0101-010101010101: their streams share") &&
                     Contains("run the ranks as processes under MPS"));
      CHECK(plan.sharesGpuWithThread == std::vector<bool>{false, true, true});
    }
  }
  SECTION("a rank that cannot tell what its GPU holds") {
    GpuFacts unknown = gpu(3, 64, true);
    unknown.unusable = "cuDeviceGetUuid failed: CUDA_ERROR_UNKNOWN";
    const KernelPlan plan = planKernels({gpu(2, 64, true), unknown}, onOneHost({10, 11}), 8);
    CHECK(plan.channels == 0);
    CHECK(plan.declined ==
          "rank 1 cannot tell what its GPU holds: cuDeviceGetUuid failed: CUDA_ERROR_UNKNOWN");
    // Which ranks are threads sharing a GPU is settled before any reason to decline.
    const KernelPlan threads =
        planKernels({unknown, gpu(2, 64, true), gpu(2, 64, true)}, onOneHost({10, 11, 11}), 8);
    CHECK_THAT(threads.declined, Contains("rank 0 cannot tell"));
    CHECK(threads.sharesGpuWithThread == std::vector<bool>{false, true, true});
  }
  SECTION("a GPU holding less than a channel per rank") {
    const std::vector<GpuFacts> ranks(3, gpu(4, 2, true));
    const KernelPlan plan = planKernels(ranks, onOneHost({10, 11, 12}), 8);
    CHECK(plan.channels == 0);
    CHECK_THAT(plan.declined, Contains("holds 2 of the collective kernels' blocks at once, fewer "
                                       "than one channel for each of its 3 ranks (0, 1, 2)"));
  }
}

TEST_CASE("kernel plan: random layouts against a search over channel counts",
          "[runtime][gpu-sharing]") {
  std::mt19937_64 rng(kSeed + 1);
  INFO("seed " << kSeed + 1);
  for (int trial = 0; trial < 500; ++trial) {
    const int nranks = 1 + static_cast<int>(rng() % 9),
              maxChannels = 1 + static_cast<int>(rng() % 16);
    std::vector<GpuFacts> ranks;
    std::vector<RankProcess> processes;
    for (int r = 0; r < nranks; ++r) {
      ranks.push_back(
          gpu(static_cast<uint8_t>(rng() % 3), static_cast<int>(rng() % 40), rng() % 4 != 0));
      const bool other = rng() % 3 == 0;
      processes.push_back({other ? "machine-b" : "machine-a", rng() % 2 == 0 ? "host-a" : "host-b",
                           static_cast<int64_t>(rng() % 16)});
    }
    int best = 0;  // the most channels, up to maxChannels, that fit
    for (int c = 1; c <= maxChannels; ++c)
      if (fits(ranks, processes, c)) best = c;
    const KernelPlan plan = planKernels(ranks, processes, maxChannels);
    INFO("trial " << trial);
    CHECK(plan.channels == best);
    CHECK(plan.declined.empty() == (best > 0));
  }
}
