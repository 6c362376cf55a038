#include "runtime/gpu/channel_rings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "base/byte_codec.hpp"
#include "base/error.hpp"

namespace tutti::runtime::gpu {
namespace {

constexpr uint32_t kRingsVersion = 1;
// Far above what a search plans (a ring per channel, a GPU per bus id of 12 characters).
constexpr uint32_t kMostRings = 64;
constexpr uint32_t kMostGpus = 1024;
constexpr size_t kMostBusIdBytes = 64;

}  // namespace

std::string encodeGpuRings(const GpuRings& rings) {
  ByteWriter out;
  out.u32(kRingsVersion).u32(static_cast<uint32_t>(rings.size()));
  for (const std::vector<std::string>& ring : rings) {
    out.u32(static_cast<uint32_t>(ring.size()));
    for (const std::string& gpu : ring) out.str(gpu);
  }
  return std::string(out.bytes());
}

GpuRings decodeGpuRings(const std::string& bytes, int rank, int from) {
  const std::string what = fmt::format("rank {}: rank {}'s GPU rings", rank, from);
  ByteReader in(bytes, ErrorCode::kRemote, what);
  if (const uint32_t version = in.u32(); version != kRingsVersion)
    in.fail("version {}, this rank's is {} (do they run the same tutti build?)", version,
            kRingsVersion);
  const uint32_t count = in.u32();
  if (count > kMostRings) in.fail("{} rings (at most {})", count, kMostRings);
  GpuRings rings(count);
  for (std::vector<std::string>& ring : rings) {
    const uint32_t gpus = in.u32();
    if (gpus > kMostGpus) in.fail("a ring of {} GPUs (at most {})", gpus, kMostGpus);
    for (uint32_t g = 0; g < gpus; ++g) ring.push_back(in.str(kMostBusIdBytes));
  }
  in.end();
  return rings;
}

bool ringsFromGpus(const std::vector<std::string>& hosts, bool given) {
  return !given && std::all_of(hosts.begin(), hosts.end(),
                               [&](const std::string& host) { return host == hosts[0]; });
}

ChannelRings planChannelRings(const std::vector<GpuFacts>& facts,
                              const std::vector<std::string>& hosts,
                              const std::vector<int>& cpuOrder, bool given, const GpuRings& rings) {
  if (facts.size() != hosts.size() || cpuOrder.size() != facts.size() || cpuOrder.empty())
    raise(ErrorCode::kInternal, "planChannelRings: {} ranks' facts, {} hosts, a ring of {}",
          facts.size(), hosts.size(), cpuOrder.size());
  const auto cpuRing = [&](std::string why) { return ChannelRings{{cpuOrder}, std::move(why)}; };
  if (given) return cpuRing("TUTTI_RING_ORDER gives the ring");
  if (!ringsFromGpus(hosts, given)) return cpuRing("the ranks span hosts");
  if (rings.empty()) return cpuRing("the topology plans no rings over the ranks' GPUs");
  ChannelRings plan;
  for (const std::vector<std::string>& ring : rings) {
    std::map<std::string, size_t> place;
    for (size_t i = 0; i < ring.size(); ++i) place.emplace(ring[i], i);
    std::vector<size_t> at(facts.size());
    for (size_t rank = 0; rank < facts.size(); ++rank) {
      const auto found = place.find(facts[rank].busId);
      if (found == place.end())
        return cpuRing(fmt::format("rank {}'s GPU ({}) is in none of the topology's rings", rank,
                                   facts[rank].busId.empty() ? "no bus id" : facts[rank].busId));
      at[rank] = found->second;
    }
    std::vector<int>& order = plan.orders.emplace_back(cpuOrder);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return at[static_cast<size_t>(a)] < at[static_cast<size_t>(b)];
    });
  }
  return plan;
}

}  // namespace tutti::runtime::gpu
