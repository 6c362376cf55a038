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
double ringCost(size_t bytes, int n, double alpha, double beta) {
  return (n - 1) * alpha + (n - 1.0) / n * static_cast<double>(bytes) * beta;
}
double chainCost(size_t bytes, int n, double alpha, double beta) {
  return (n - 1) * alpha + static_cast<double>(bytes) * beta;
}

// One-shot sends the whole buffer to every peer: worth it only while latency dominates.
constexpr size_t kOneShotMaxBytes = 64 << 10;

struct LinkModel {
  double alphaUs;
  double betaUsPerByte;
};

LinkModel linkModel(const Communicator& comm) {
  const bool allShm = comm.localSize() == comm.size() && comm.settings().transport != "tcp";
  // Measured on a 2-core machine (README, "Measured"): shm ~0.3 us per step, TCP loopback ~15 us.
  LinkModel model =
      allShm ? LinkModel{0.3, 1.0 / (kShmGBs * 1000)} : LinkModel{15.0, 1.0 / (kTcpGBs * 1000)};
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

const std::vector<Algorithm>& algorithms() {
  static const std::vector<Algorithm> table = {
      {Collective::kAllReduce, "oneshot", kOneShotMaxBytes, oneShotAllReduceCost, allreduceOneShot},
      {Collective::kAllReduce, "ring", 0, ringAllReduceCost, allreduceRing},
      {Collective::kAllReduce, "tree", 0, treeAllReduceCost, allreduceTree},
      {Collective::kReduceScatter, "ring", 0, ringCost, reduceScatterRing},
      {Collective::kAllGather, "ring", 0, ringCost, allgatherRing},
      {Collective::kBroadcast, "chain", 0, chainCost, broadcastChain},
      {Collective::kReduce, "chain", 0, chainCost, reduceChain},
      {Collective::kAllToAll, "pairwise", 0, ringCost, alltoallPairwise},
  };
  return table;
}

const Algorithm& pickAlgorithm(Collective collective, size_t bytes, const Communicator& comm) {
  // Decided once per call, not per table entry: this runs before every operation.
  const std::string& forced = comm.settings().algorithm;
  const bool isForced = collective == Collective::kAllReduce && forced != "auto";
  const LinkModel link = linkModel(comm);
  const Algorithm* best = nullptr;
  double bestCost = std::numeric_limits<double>::infinity();
  for (const Algorithm& algorithm : algorithms()) {
    if (algorithm.collective != collective) continue;
    if (isForced) {
      if (forced == algorithm.name) return algorithm;
      continue;
    }
    if (algorithm.maxBytes != 0 && bytes > algorithm.maxBytes) continue;
    const double cost = algorithm.costUs(bytes, comm.size(), link.alphaUs, link.betaUsPerByte);
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

void finishAverage(OpContext& ctx, void* data, size_t count) {
  if (ctx.op == kernels::RedOp::kAvg && count > 0)
    kernels::avgFinish(data, data, count, ctx.dtype, ctx.comm.size());
}

}  // namespace tutti::runtime
