// Ring channels inside a host, by bandwidth reservation (NCCL's search, src/graph/search.cc).
//
// Every directed link starts with its bandwidth. For a path-type limit (NVL first, then NVB,
// PIX, PXB, PHB, SYS) and a per-channel speed, rings are found one after another by a depth-
// first search over the GPUs: a hop a -> b is allowed when the best path from a to b is within
// the limit and every link on it still has `speed` left; each hop reserves `speed` on its links,
// so a later ring (or a later hop of the same ring) sees only what is left. Each speed yields a
// number of channels; the speed with the largest total wins (ties: the faster channel). The
// first limit that yields any ring is kept: on a partial NVLink mesh, rings use NVLink only.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>

#include "topology/topology.hpp"

namespace tutti::topology {
namespace {

constexpr long kStepBudget = 200'000;  // DFS steps per ring: bounds the search on large hosts
constexpr double kEpsilon = 1e-9;

class RingSearch {
 public:
  RingSearch(const Topology& topo, const std::vector<int>& gpus, PathType limit, double speed)
      : topo_(topo), gpus_(gpus), limit_(limit), speed_(speed) {
    for (const Link& link : topo.links()) remaining_.push_back(link.bw);
  }

  std::vector<std::vector<int>> run(int maxChannels) {
    std::vector<std::vector<int>> rings;
    while (static_cast<int>(rings.size()) < maxChannels) {
      std::vector<int> ring{gpus_[0]};
      std::vector<bool> used(topo_.nodes().size(), false);
      used[gpus_[0]] = true;
      steps_ = 0;
      if (!extend(ring, used)) break;
      rings.push_back(ring);
    }
    return rings;
  }

 private:
  bool fits(int a, int b) const {
    const Path& path = topo_.path(a, b);
    if (path.type > limit_ || path.links.empty()) return false;
    return std::all_of(path.links.begin(), path.links.end(),
                       [&](int id) { return remaining_[id] + kEpsilon >= speed_; });
  }

  void reserve(int a, int b, double sign) {
    for (int id : topo_.path(a, b).links) remaining_[id] -= sign * speed_;
  }

  double headroom(int a, int b) const {
    double least = INFINITY;
    for (int id : topo_.path(a, b).links) least = std::min(least, remaining_[id]);
    return least;
  }

  // Candidates after `from`: closest path type first, then the most bandwidth left, then the
  // widest path (so that later rings repeat the pattern of the first over bundled links).
  std::vector<int> candidates(int from, const std::vector<bool>& used) const {
    std::vector<int> next;
    for (int gpu : gpus_)
      if (!used[gpu] && fits(from, gpu)) next.push_back(gpu);
    auto key = [&](int to) {
      const Path& path = topo_.path(from, to);
      return std::make_tuple(path.type, -headroom(from, to), -path.bw);
    };
    std::stable_sort(next.begin(), next.end(), [&](int x, int y) { return key(x) < key(y); });
    return next;
  }

  bool extend(std::vector<int>& ring, std::vector<bool>& used) {
    if (++steps_ > kStepBudget) return false;
    int last = ring.back();
    if (ring.size() == gpus_.size()) {
      if (gpus_.size() > 1 && !fits(last, ring.front())) return false;
      if (gpus_.size() > 1) reserve(last, ring.front(), 1);
      return true;
    }
    for (int next : candidates(last, used)) {
      reserve(last, next, 1);
      ring.push_back(next);
      used[next] = true;
      if (extend(ring, used)) return true;
      used[next] = false;
      ring.pop_back();
      reserve(last, next, -1);
    }
    return false;
  }

  const Topology& topo_;
  const std::vector<int>& gpus_;
  PathType limit_;
  double speed_;
  std::vector<double> remaining_;
  long steps_ = 0;
};

// Per-channel speeds worth trying: each GPU-to-GPU bandwidth within the limit, divided by
// 1..maxChannels, fastest first.
std::vector<double> speeds(const Topology& topo, const std::vector<int>& gpus, PathType limit,
                           int maxChannels) {
  std::vector<double> out;
  for (int a : gpus)
    for (int b : gpus)
      if (a != b && topo.path(a, b).type <= limit)
        for (int k = 1; k <= maxChannels; ++k) out.push_back(topo.path(a, b).bw / k);
  std::sort(out.begin(), out.end(), std::greater<>());
  out.erase(std::unique(out.begin(), out.end(),
                        [](double x, double y) { return std::abs(x - y) < kEpsilon; }),
            out.end());
  return out;
}

PathType farthestHop(const Topology& topo, const std::vector<int>& ring) {
  PathType type = PathType::kLoc;
  for (size_t i = 0; i < ring.size() && ring.size() > 1; ++i)
    type = std::max(type, topo.path(ring[i], ring[(i + 1) % ring.size()]).type);
  return type;
}

}  // namespace

RingPlan searchRings(const Topology& topo, int host, const RingSearchOptions& options) {
  std::vector<int> gpus = options.gpus.empty() ? topo.nodesOf(NodeKind::kGpu, host) : options.gpus;
  RingPlan plan;
  if (gpus.empty() || options.maxChannels < 1) return plan;
  if (gpus.size() == 1) {
    plan.channels.push_back(Channel{gpus, PathType::kLoc, 0});
    return plan;
  }
  for (PathType limit : {PathType::kNvl, PathType::kNvb, PathType::kC2c, PathType::kPix,
                         PathType::kPxb, PathType::kP2c, PathType::kPhb, PathType::kSys}) {
    for (double speed : speeds(topo, gpus, limit, options.maxChannels)) {
      auto rings = RingSearch(topo, gpus, limit, speed).run(options.maxChannels);
      double total = static_cast<double>(rings.size()) * speed;
      if (total <= plan.totalBw + kEpsilon) continue;
      plan = RingPlan{};
      for (auto& ring : rings)
        plan.channels.push_back(Channel{ring, farthestHop(topo, ring), speed});
      plan.totalBw = total;
    }
    if (!plan.channels.empty()) break;
  }
  return plan;
}

std::string formatChannel(const Topology& topo, int number, const Channel& channel) {
  std::string out = fmt::format("ring {}:", number);
  for (int gpu : channel.ring)
    out += channel.rail < 0 ? fmt::format(" {}", topo.node(gpu).index)
                            : fmt::format(" {}/{}", topo.node(gpu).host, topo.node(gpu).index);
  out += fmt::format(" via {} {:g} GB/s", pathTypeName(channel.type),
                     std::round(channel.bw * 10) / 10);
  if (channel.rail < 0) return out;
  out += fmt::format(" on NIC {}", channel.rail);
  return channel.exitRail == channel.rail ? out
                                          : out + fmt::format(" in, NIC {} out", channel.exitRail);
}

std::vector<int> cpuRingOrder(std::vector<RankPlace> places) {
  std::sort(places.begin(), places.end(), [](const RankPlace& x, const RankPlace& y) {
    return std::tie(x.package, x.numa, x.core, x.rank) <
           std::tie(y.package, y.numa, y.core, y.rank);
  });
  std::vector<int> order;
  for (const RankPlace& place : places) order.push_back(place.rank);
  return order;
}

RankPlace placeOf(const Topology& topo, int os) {
  for (const Pu& pu : topo.pus)
    if (pu.os == os) return RankPlace{0, pu.package, topo.node(pu.cpu).numaId, pu.core};
  return RankPlace{0, -1, -1, -1};
}

}  // namespace tutti::topology
