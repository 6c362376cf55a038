// The algorithm table and the planner. Costs are the classic alpha-beta model: alpha is the
// latency of one step over the transport, beta the time per byte; they only need to rank the
// algorithms correctly, and tutti-bench --algo all shows where the crossovers really are.
#include <limits>

#include "runtime/collectives/algorithm.hpp"

namespace tutti::runtime {
namespace {

double log2Ceil(int n) {
  double steps = 0;
  for (int span = 1; span < n; span <<= 1) steps += 1;
  return steps;
}

double ringAllReduceCost(size_t bytes, int n, double alpha, double beta) {
  return 2.0 * (n - 1) * alpha + 2.0 * (n - 1) / n * static_cast<double>(bytes) * beta;
}
double treeAllReduceCost(size_t bytes, int n, double alpha, double beta) {
  // Each half climbs and descends its tree; a rank forwards each byte about once up and once down.
  return 2.0 * log2Ceil(n) * alpha + 2.0 * static_cast<double>(bytes) * beta;
}
double oneShotAllReduceCost(size_t bytes, int n, double alpha, double beta) {
  return alpha + (n - 1) * static_cast<double>(bytes) * beta;
}
// Up to three small rounds (offers, the vote on mappings, a barrier; the last barrier overlaps
// the caller's next step) and each byte read once from a peer; what it saves over the ring, the
// copies into and out of FIFO slots, is in beta's memory traffic, which the model folds into one
// figure.
double directAllReduceCost(size_t bytes, int n, double alpha, double beta) {
  return 3 * alpha + (n - 1.0) / n * static_cast<double>(bytes) * beta;
}
// One copy through memory per byte instead of the ring's two (into a slot, out of it).
double directCost(size_t bytes, int n, double alpha, double beta) {
  return 3 * alpha + (n - 1.0) / n * static_cast<double>(bytes) * beta / 2;
}
double ringCost(size_t bytes, int n, double alpha, double beta) {
  return (n - 1) * alpha + (n - 1.0) / n * static_cast<double>(bytes) * beta;
}
double chainCost(size_t bytes, int n, double alpha, double beta) {
  return (n - 1) * alpha + static_cast<double>(bytes) * beta;
}

// One-shot sends the whole buffer to every peer: worth it only while latency dominates.
constexpr size_t kOneShotMaxBytes = 64 << 10;
// Below this ordinary buffers, which most are, gain nothing from the direct algorithms and pay
// their round of offers (2 ranks, tutti-bench --algo ring / direct, out of place: 64 KiB 17.4 us
// direct against 14.6 for the ring, 128 KiB 29-32 against 28-31, 256 KiB 39-44 against 54-56;
// allreduce_direct.cpp). Ordinary buffers above it that the all-reduce would not pull (in place
// below 4 MiB, above 16 MiB or with more than 2 ranks, out of place above 8 MiB; or with
// TUTTI_DIRECT_BUFFERS=registered) pay that round and run the ring.
constexpr size_t kDirectMinBytes = 256 << 10;

bool allSharedMemory(const Communicator& comm) {
  return comm.connections().allShareMemory();
}

LinkModel linkModel(const Communicator& comm) {
  LinkModel model = allSharedMemory(comm) ? kShmLinks : kTcpLinks;
  // The topology's estimate of the ranks' ring (its slowest hop) where there is one.
  if (comm.cpuRing().bw > 0) model.betaUsPerByte = 1.0 / (comm.cpuRing().bw * 1000);
  return model;
}

}  // namespace

const char* collectiveName(Collective collective) {
  switch (collective) {
    case Collective::kAllReduce: return "allreduce";
    case Collective::kReduceScatter: return "reduce_scatter";
    case Collective::kAllGather: return "allgather";
    case Collective::kBroadcast: return "broadcast";
    case Collective::kReduce: return "reduce";
    case Collective::kAllToAll: return "alltoall";
  }
  return "?";
}

bool reduces(Collective collective) {
  return collective == Collective::kAllReduce || collective == Collective::kReduceScatter ||
         collective == Collective::kReduce;
}

bool rooted(Collective collective) {
  return collective == Collective::kBroadcast || collective == Collective::kReduce;
}

const std::vector<Algorithm>& algorithms() {
  static const std::vector<Algorithm> table = {
      {Collective::kAllReduce, "oneshot", kOneShotMaxBytes, 0, false, oneShotAllReduceCost,
       allreduceOneShot},
      {Collective::kAllReduce, "ring", 0, 0, false, ringAllReduceCost, allreduceRing},
      {Collective::kAllReduce, "tree", 0, 0, false, treeAllReduceCost, allreduceTree},
      {Collective::kAllReduce, "direct", 0, kDirectMinBytes, true, directAllReduceCost,
       allreduceDirect},
      {Collective::kReduceScatter, "ring", 0, 0, false, ringCost, reduceScatterRing},
      {Collective::kReduceScatter, "direct", 0, kDirectMinBytes, true, directCost,
       reduceScatterDirect},
      {Collective::kAllGather, "ring", 0, 0, false, ringCost, allgatherRing},
      {Collective::kAllGather, "direct", 0, kDirectMinBytes, true, directCost, allgatherDirect},
      {Collective::kBroadcast, "chain", 0, 0, false, chainCost, broadcastChain},
      {Collective::kReduce, "chain", 0, 0, false, chainCost, reduceChain},
      {Collective::kAllToAll, "pairwise", 0, 0, false, ringCost, alltoallPairwise},
  };
  return table;
}

const Algorithm& cheapestAlgorithm(Collective collective, size_t bytes, int n, bool sharedMemory,
                                   const LinkModel& link, std::string_view skip) {
  const Algorithm* best = nullptr;
  double bestCost = std::numeric_limits<double>::infinity();
  for (const Algorithm& algorithm : algorithms()) {
    if (algorithm.collective != collective || algorithm.name == skip) continue;
    if (algorithm.maxBytes != 0 && bytes > algorithm.maxBytes) continue;
    if (bytes < algorithm.minBytes || (algorithm.sharedMemoryOnly && !sharedMemory)) continue;
    const double cost = algorithm.costUs(bytes, n, link.alphaUs, link.betaUsPerByte);
    if (cost < bestCost) {
      bestCost = cost;
      best = &algorithm;
    }
  }
  if (!best)
    raise(ErrorCode::kInternal, "no {} algorithm applies to {} bytes", collectiveName(collective),
          bytes);
  return *best;
}

const Algorithm& pickAlgorithm(Collective collective, size_t bytes, const Communicator& comm,
                               std::string_view skip) {
  const Algorithm* forced = comm.settings().algorithm;
  if (collective == Collective::kAllReduce && forced && forced->name != skip) return *forced;
  return cheapestAlgorithm(collective, bytes, comm.size(), allSharedMemory(comm), linkModel(comm),
                           skip);
}

std::vector<std::string> allReduceChoices() {
  std::vector<std::string> choices = {kAutoAlgorithm};
  for (const Algorithm& algorithm : algorithms())
    if (algorithm.collective == Collective::kAllReduce) choices.emplace_back(algorithm.name);
  return choices;
}

const Algorithm* allReduceChoice(std::string_view name) {
  if (name == kAutoAlgorithm) return nullptr;
  for (const Algorithm& algorithm : algorithms())
    if (algorithm.collective == Collective::kAllReduce && name == algorithm.name) return &algorithm;
  raise(ErrorCode::kInternal, "'{}' is not an all-reduce algorithm of the table", name);
}

void finishAverage(OpContext& ctx, void* data, size_t count) {
  if (ctx.op == kernels::RedOp::kAvg && count > 0)
    kernels::avgFinish(data, data, count, ctx.dtype, ctx.comm.size());
}

}  // namespace tutti::runtime
