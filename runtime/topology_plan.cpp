#include "runtime/topology_plan.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>

#include "base/allowed_cpus.hpp"
#include "base/config.hpp"
#include "base/error.hpp"
#include "base/log.hpp"

namespace tutti::runtime {
namespace {

using topology::LinkKind;
using topology::NodeKind;
using topology::Topology;

// The first load's outcome, kept: every later init of this process reuses it (or its error).
struct Loaded {
  std::unique_ptr<Topology> topo;
  std::optional<Error> error;
};

// Ranks need their place and the CPU interconnect: the PCI tree (GPUs, NICs) only for a dump, or
// for the device channels' rings.
bool probesPciTree() {
  return !config::getString("TUTTI_TOPO_DUMP_FILE").empty();
}

Loaded load(topology::ProbeScope scope) {
  Loaded loaded;
  const std::string file = config::getString("TUTTI_TOPO_FILE");
  try {
    loaded.topo = std::make_unique<Topology>(!file.empty() ? topology::loadTopologyFile(file)
                                                           : topology::probeHost(scope));
  } catch (const Error& error) {
    if (!file.empty()) {
      loaded.error = Error(error.code(), fmt::format("TUTTI_TOPO_FILE={}: {}", file, error.what()));
    } else {
      log::warn("topology probe failed ({}): the tuning model keeps its defaults", error.what());
    }
  }
  return loaded;
}

double slowestLink(const Topology& topo, LinkKind kind) {
  double slowest = 0;
  for (const topology::Link& link : topo.links())
    if (link.kind == kind && topo.node(link.from).host == 0)
      slowest = slowest == 0 ? link.bw : std::min(slowest, link.bw);
  return slowest;
}

double fastestLink(const Topology& topo, LinkKind kind) {
  double fastest = 0;
  for (const topology::Link& link : topo.links())
    if (link.kind == kind && topo.node(link.from).host == 0) fastest = std::max(fastest, link.bw);
  return fastest;
}

struct Hop {
  const char* via;
  double bw;
};

Hop hop(const PeerInfo& a, const PeerInfo& b, const transport::TransportSelection& transport,
        const Tuning& tuning) {
  if (a.hostId != b.hostId) {
    double bw = tuning.tcpGBs;
    for (double port : {a.netGBs, b.netGBs})
      if (port > 0) bw = std::min(bw, port);
    return {"NET", bw};
  }
  // A transport that copies through the network stack although both ranks share the host.
  if (const transport::TransportKind* kind = transport.choose(a.reach(), b.reach());
      kind && !kind->sharesMemory)
    return {"NET", tuning.tcpGBs};
  if (a.numa >= 0 && b.numa >= 0 && a.numa != b.numa && a.smpGBs > 0)
    return {"SYS", std::min(tuning.shmGBs, a.smpGBs)};
  return {"SHM", tuning.shmGBs};
}

// The place the thread's CPU affinity pins it to: each of package, NUMA node and core where every
// allowed CPU shares it, else -1 (an unpinned rank has no place; where it runs now says nothing).
topology::RankPlace affinityPlace(const Topology& topo) {
  topology::RankPlace common{0, -1, -1, -1};
  bool first = true;
  auto merge = [&first](int& into, int value) { into = first || into == value ? value : -1; };
  for (int cpu : allowedCpus()) {
    const topology::RankPlace place = topology::placeOf(topo, cpu);
    merge(common.package, place.package);
    merge(common.numa, place.numa);
    merge(common.core, place.core);
    first = false;
  }
  return common;
}

// `order`'s ranks grouped by host, hosts in the order `order` first reaches them.
std::vector<std::vector<int>> ranksByHost(const std::vector<PeerInfo>& peers,
                                          const std::vector<int>& order) {
  std::vector<std::vector<int>> hosts;
  std::map<std::string, size_t> index;
  for (int rank : order) {
    const std::string& host = peers[static_cast<size_t>(rank)].hostId;
    const auto [at, added] = index.try_emplace(host, hosts.size());
    if (added) hosts.emplace_back();
    hosts[at->second].push_back(rank);
  }
  return hosts;
}

}  // namespace

std::string formatRanks(const std::vector<int>& ranks) {
  std::string out;
  for (int rank : ranks) out += fmt::format("{}{}", out.empty() ? "" : " ", rank);
  return out;
}

const Topology* hostTopology() {
  static const Loaded loaded =
      load(probesPciTree() ? topology::ProbeScope::kFull : topology::ProbeScope::kCpus);
  if (loaded.error) throw *loaded.error;
  return loaded.topo.get();
}

std::vector<std::vector<std::string>> gpuRingsOf(const Topology& topo,
                                                 const std::vector<std::string>& busIds) {
  std::vector<std::vector<std::string>> rings;
  topology::RingSearchOptions options;
  for (const std::string& busId : busIds) {
    const int node = topo.findBusId(0, busId);
    const bool gpu = node >= 0 && topo.node(node).kind == NodeKind::kGpu;
    if (gpu && std::find(options.gpus.begin(), options.gpus.end(), node) == options.gpus.end())
      options.gpus.push_back(node);
  }
  if (options.gpus.empty()) return rings;
  for (const topology::Channel& channel : topology::searchRings(topo, 0, options).channels) {
    std::vector<std::string>& ring = rings.emplace_back();
    for (const int gpu : channel.ring) ring.push_back(topo.node(gpu).busId);
  }
  return rings;
}

std::vector<std::vector<std::string>> hostGpuRings(const std::vector<std::string>& busIds) {
  if (!config::getString("TUTTI_TOPO_FILE").empty() || probesPciTree()) {
    const Topology* topo = hostTopology();
    return topo ? gpuRingsOf(*topo, busIds) : std::vector<std::vector<std::string>>{};
  }
  static const Loaded withPciTree = load(topology::ProbeScope::kFull);
  return withPciTree.topo ? gpuRingsOf(*withPciTree.topo, busIds)
                          : std::vector<std::vector<std::string>>{};
}

void describePlace(PeerInfo& self) {
  const Topology* topo = hostTopology();
  if (!topo) return;
  const topology::RankPlace place = affinityPlace(*topo);
  self.package = place.package;
  self.numa = place.numa;
  self.core = place.core;
  self.smpGBs = slowestLink(*topo, LinkKind::kSmp);
  self.netGBs = fastestLink(*topo, LinkKind::kNet);
}

void dumpTopology() {
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string file = config::getString("TUTTI_TOPO_DUMP_FILE");
    const Topology* topo = hostTopology();
    if (file.empty() || !topo) return;
    try {
      topology::saveTopologyFile(*topo, file);
      log::info("topology written to {} (TUTTI_TOPO_DUMP_FILE)", file);
    } catch (const Error& error) {
      // Only rank 0 writes: failing its init alone would leave the others waiting for it.
      log::warn("TUTTI_TOPO_DUMP_FILE={}: {}", file, error.what());
    }
  });
}

std::vector<int> parseRingOrder(const std::string& text) {
  std::vector<int> order;
  size_t start = 0;
  while ((start = text.find_first_not_of(" ,", start)) != std::string::npos) {
    const size_t stop = std::min(text.find_first_of(" ,", start), text.size());
    const std::string token = text.substr(start, stop - start);
    char* end = nullptr;
    errno = 0;
    const long rank = std::strtol(token.c_str(), &end, 10);
    if (errno != 0 || *end != '\0' || !std::isdigit(static_cast<unsigned char>(token[0])) ||
        rank >= (1 << 24))
      raise(ErrorCode::kInvalidArgument,
            "TUTTI_RING_ORDER='{}': '{}' is not a rank (ranks are numbers separated by spaces or "
            "commas)",
            text, token);
    if (std::find(order.begin(), order.end(), rank) != order.end())
      raise(ErrorCode::kInvalidArgument, "TUTTI_RING_ORDER='{}': rank {} appears twice", text,
            rank);
    order.push_back(static_cast<int>(rank));
    start = stop;
  }
  return order;
}

CpuRing planCpuRing(const std::vector<PeerInfo>& peers,
                    const transport::TransportSelection& transport, const Tuning& tuning,
                    const std::vector<int>& given) {
  const size_t n = peers.size();
  CpuRing ring;
  if (!given.empty()) {
    std::vector<int> sorted = given, everyRank(n);
    std::sort(sorted.begin(), sorted.end());
    std::iota(everyRank.begin(), everyRank.end(), 0);
    if (sorted != everyRank)
      raise(ErrorCode::kInvalidArgument,
            "TUTTI_RING_ORDER='{}' is not a ring of this communicator's {} ranks: it must name "
            "each of 0..{} once",
            formatRanks(given), n, n - 1);
    ring.order = given;
    ring.given = true;
  } else {
    std::map<std::string, std::vector<topology::RankPlace>> byHost;
    std::vector<std::string> hosts;  // in order of their first rank
    for (const PeerInfo& peer : peers) {
      if (!byHost.count(peer.hostId)) hosts.push_back(peer.hostId);
      byHost[peer.hostId].push_back({peer.rank, peer.package, peer.numa, peer.core});
    }
    for (const std::string& host : hosts)
      for (int rank : topology::cpuRingOrder(byHost[host])) ring.order.push_back(rank);
  }
  const std::vector<std::vector<int>> hosts = ranksByHost(peers, ring.order);
  ring.trees = {topology::rankTree(hosts, 0), topology::rankTree(hosts, 1)};
  ring.treeDepth = std::max(topology::treeDepth(ring.trees[0]), topology::treeDepth(ring.trees[1]));
  ring.position.assign(n, 0);
  for (size_t i = 0; i < n; ++i)
    ring.position[static_cast<size_t>(ring.order[i])] = static_cast<int>(i);
  for (size_t i = 0; i < n && n > 1; ++i) {
    const Hop link = hop(peers[static_cast<size_t>(ring.order[i])],
                         peers[static_cast<size_t>(ring.order[(i + 1) % n])], transport, tuning);
    if (ring.bw == 0 || link.bw < ring.bw) {
      ring.via = link.via;
      ring.bw = link.bw;
    }
  }
  return ring;
}

void logChannels(const CpuRing& ring) {
  if (ring.order.size() < 2 || log::level() < log::Level::kInfo) return;
  log::info("ring 0: {} via {} {:g} GB/s{}", formatRanks(ring.order), ring.via,
            std::round(ring.bw * 10) / 10, ring.given ? " (TUTTI_RING_ORDER)" : "");
  for (size_t t = 0; t < ring.trees.size(); ++t) {
    std::string parents;
    for (const topology::TreeNode& node : ring.trees[t])
      parents += node.parent < 0 ? " -" : fmt::format(" {}", node.parent);
    log::info("tree {}: parents{}", t, parents);
  }
  const Topology* topo = hostTopology();
  if (!topo || topo->nodesOf(NodeKind::kGpu, 0).empty()) return;
  const topology::RingPlan plan = topology::searchRings(*topo, 0);
  for (size_t i = 0; i < plan.channels.size(); ++i)
    log::info("topology GPU {}",
              topology::formatChannel(*topo, static_cast<int>(i), plan.channels[i]));
}

}  // namespace tutti::runtime
