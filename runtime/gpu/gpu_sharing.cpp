#include "runtime/gpu/gpu_sharing.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <span>

#include "base/byte_codec.hpp"
#include "base/error.hpp"

namespace tutti::runtime::gpu {
namespace {

constexpr uint32_t kFactsVersion = 4;
// Far above any GPU (an H200 holds 132 x 8 blocks of 256 threads), low enough to be no overflow.
constexpr int kMostResidentBlocks = 1 << 20;
constexpr size_t kMostReasonBytes = 4096;
// More GPUs than one machine holds.
constexpr uint32_t kMostGpus = 1024;
// Far above a bus id's 12 characters.
constexpr size_t kMostBusIdBytes = 64;

std::string rankList(const std::vector<int>& ranks) {
  return fmt::format("{}", fmt::join(ranks, ", "));
}

}  // namespace

std::string encodeGpuFacts(const GpuFacts& facts) {
  ByteWriter out;
  out.u32(kFactsVersion)
      .raw(std::as_bytes(std::span(facts.uuid)))
      .i32(facts.residentBlocks)
      .u8(facts.mps ? 1 : 0)
      .str(facts.unusable)
      .u32(static_cast<uint32_t>(facts.unreachable.size()));
  for (const auto& uuid : facts.unreachable) out.raw(std::as_bytes(std::span(uuid)));
  out.str(facts.busId);
  return std::string(out.bytes());
}

GpuFacts decodeGpuFacts(const std::string& bytes, int rank, int from) {
  const std::string what = fmt::format("rank {}: rank {}'s GPU facts", rank, from);
  ByteReader in(bytes, ErrorCode::kRemote, what);
  if (const uint32_t version = in.u32(); version != kFactsVersion)
    in.fail("version {}, this rank's is {} (do they run the same tutti build?)", version,
            kFactsVersion);
  GpuFacts facts;
  in.rawInto(std::as_writable_bytes(std::span(facts.uuid)));
  facts.residentBlocks = in.i32();
  if (facts.residentBlocks < 0 || facts.residentBlocks > kMostResidentBlocks)
    in.fail("{} resident blocks (0 to {})", facts.residentBlocks, kMostResidentBlocks);
  const uint8_t mps = in.u8();
  if (mps > 1) in.fail("MPS flag {} (0 or 1)", mps);
  facts.mps = mps == 1;
  facts.unusable = in.str(kMostReasonBytes);
  const uint32_t unreachable = in.u32();
  if (unreachable > kMostGpus) in.fail("{} GPUs out of reach (at most {})", unreachable, kMostGpus);
  facts.unreachable.resize(unreachable);
  for (auto& uuid : facts.unreachable) in.rawInto(std::as_writable_bytes(std::span(uuid)));
  facts.busId = in.str(kMostBusIdBytes);
  in.end();
  return facts;
}

bool writesInPlace(const GpuFacts& writer, const GpuFacts& owner) {
  return writer.uuid == owner.uuid ||
         std::find(writer.unreachable.begin(), writer.unreachable.end(), owner.uuid) ==
             writer.unreachable.end();
}

std::string uuidText(const std::array<uint8_t, 16>& uuid) {
  std::string text = "GPU-";
  for (size_t i = 0; i < uuid.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text += '-';
    text += fmt::format("{:02x}", uuid[i]);
  }
  return text;
}

KernelPlan planKernels(const std::vector<GpuFacts>& ranks,
                       const std::vector<RankProcess>& processes, int maxChannels) {
  if (processes.size() != ranks.size())
    raise(ErrorCode::kInternal, "planKernels: {} ranks' facts, {} processes", ranks.size(),
          processes.size());
  // A UUID names one GPU; the machine is in the key too, so that GPUs that only claim one (copies
  // of a virtual machine's) are not taken for one GPU shared across machines. Containers of one
  // machine share its GPUs: one machine, whatever their host names and namespaces.
  std::map<std::pair<std::string, std::array<uint8_t, 16>>, std::map<RankProcess, std::vector<int>>>
      byGpu;
  for (size_t r = 0; r < ranks.size(); ++r)
    byGpu[{processes[r].machine, ranks[r].uuid}][processes[r]].push_back(static_cast<int>(r));
  // Declined or not, the plan keeps what every rank published, and which ranks share a GPU with a
  // thread of their process.
  KernelPlan plan{maxChannels, "", ranks, std::vector<bool>(ranks.size(), false)};
  for (const auto& [where, byProcess] : byGpu)
    for (const auto& [process, threads] : byProcess)
      if (threads.size() > 1)
        for (int r : threads) plan.sharesGpuWithThread[static_cast<size_t>(r)] = true;
  const auto decline = [&plan](std::string why) {
    plan.channels = 0;
    plan.declined = std::move(why);
    return plan;
  };
  for (size_t r = 0; r < ranks.size(); ++r)
    if (!ranks[r].unusable.empty())
      return decline(
          fmt::format("rank {} cannot tell what its GPU holds: {}", r, ranks[r].unusable));
  for (const auto& [where, byProcess] : byGpu) {
    const std::array<uint8_t, 16>& uuid = where.second;
    std::vector<int> sharing;
    int resident = kMostResidentBlocks;
    bool mps = true;
    for (const auto& [process, threads] : byProcess) {
      if (threads.size() > 1)
        return decline(
            fmt::format("ranks {} are threads of one process on {}: their streams share its "
                        "context's hardware queues, where what follows one rank's kernel (an "
                        "event, the next kernel's wait) can hold back the peer kernel it waits "
                        "for (give each rank its own GPU, or run the ranks as processes under MPS)",
                        rankList(threads), uuidText(uuid)));
      for (int r : threads) {
        const auto at = static_cast<size_t>(r);
        resident = std::min(resident, ranks[at].residentBlocks);
        mps = mps && ranks[at].mps;
        sharing.push_back(r);
      }
    }
    std::sort(sharing.begin(), sharing.end());
    if (byProcess.size() > 1 && !mps)
      return decline(
          fmt::format("ranks {} share {} without MPS: the GPU runs different processes' kernels "
                      "in turns, and each rank's kernel waits for the others' (start the MPS "
                      "control daemon, nvidia-cuda-mps-control -d, to run them as kernels)",
                      rankList(sharing), uuidText(uuid)));
    const int k = static_cast<int>(sharing.size());
    if (resident / k < 1)
      return decline(
          fmt::format("{} holds {} of the collective kernels' blocks at once, fewer than one "
                      "channel for each of its {} ranks ({})",
                      uuidText(uuid), resident, k, rankList(sharing)));
    plan.channels = std::min(plan.channels, resident / k);
  }
  return plan;
}

}  // namespace tutti::runtime::gpu
