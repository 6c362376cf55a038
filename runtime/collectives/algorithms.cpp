// The algorithm table and the planner. Costs are the classic alpha-beta model: alpha is the
// latency of one step over the transport, beta the time per byte; they only need to rank the
// algorithms correctly, and tutti-bench --algo all shows where the crossovers really are.
#include <algorithm>
#include <bit>
#include <limits>

#include "runtime/collectives/algorithm.hpp"
#include "topology/double_tree.hpp"

namespace tutti::runtime {
namespace {

double ringAllReduceCost(size_t bytes, const RankShape& shape, double alpha, double beta) {
  const int n = shape.ranks;
  return 2.0 * (n - 1) * alpha + 2.0 * (n - 1) / n * static_cast<double>(bytes) * beta;
}
double treeAllReduceCost(size_t bytes, const RankShape& shape, double alpha, double beta) {
  // Each half climbs and descends its tree; a rank forwards each byte about once up and once down.
  return 2.0 * shape.treeDepth * alpha + 2.0 * static_cast<double>(bytes) * beta;
}
double oneShotAllReduceCost(size_t bytes, const RankShape& shape, double alpha, double beta) {
  const int n = shape.ranks;
  return alpha + (n - 1) * static_cast<double>(bytes) * beta;
}
// log2(n) rounds that each move the whole buffer, two more where n is not a power of two.
double doublingAllReduceCost(size_t bytes, const RankShape& shape, double alpha, double beta) {
  const auto ranks = static_cast<unsigned>(shape.ranks), blocks = std::bit_floor(ranks);
  const int rounds = std::countr_zero(blocks) + (blocks < ranks ? 2 : 0);
  return rounds * (alpha + static_cast<double>(bytes) * beta);
}
// Up to three small rounds (offers, the vote on mappings, a barrier; the last barrier overlaps
// the caller's next step) and each byte read once from a peer; what it saves over the ring, the
// copies into and out of FIFO slots, is in beta's memory traffic, which the model folds into one
// figure.
double directAllReduceCost(size_t bytes, const RankShape& shape, double alpha, double beta) {
  const int n = shape.ranks;
  return 3 * alpha + (n - 1.0) / n * static_cast<double>(bytes) * beta;
}
// One copy through memory per byte instead of the ring's two (into a slot, out of it).
double directCost(size_t bytes, const RankShape& shape, double alpha, double beta) {
  const int n = shape.ranks;
  return 3 * alpha + (n - 1.0) / n * static_cast<double>(bytes) * beta / 2;
}
double ringCost(size_t bytes, const RankShape& shape, double alpha, double beta) {
  const int n = shape.ranks;
  return (n - 1) * alpha + (n - 1.0) / n * static_cast<double>(bytes) * beta;
}
double chainCost(size_t bytes, const RankShape& shape, double alpha, double beta) {
  const int n = shape.ranks;
  return (n - 1) * alpha + static_cast<double>(bytes) * beta;
}

bool allSharedMemory(const GroupView& group) {
  return group.connections.allShareMemory();
}

LinkModel linkModel(const GroupView& group) {
  LinkModel model = linkModelOf(group.settings.tuning, allSharedMemory(group));
  // The topology's estimate of the ranks' ring (its slowest hop) where there is one.
  if (group.ring.bw > 0) model.betaUsPerByte = 1.0 / (group.ring.bw * 1000);
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
      // One-shot sends the whole buffer to every peer: worth it only while latency dominates.
      {Collective::kAllReduce, "oneshot", &Tuning::oneShotMaxBytes, nullptr, false,
       oneShotAllReduceCost, allreduceOneShot, &Tuning::tcpOneShotMaxBytes},
      {Collective::kAllReduce, "ring", nullptr, nullptr, false, ringAllReduceCost, allreduceRing,
       nullptr, &Tuning::treeOverRing, &Tuning::tcpTreeOverRing},
      {Collective::kAllReduce, "tree", nullptr, nullptr, false, treeAllReduceCost, allreduceTree},
      // Recursive doubling: only where a sweep measured it ahead (tuning.hpp, doubling_range).
      {Collective::kAllReduce, "doubling", nullptr, nullptr, false, doublingAllReduceCost,
       allreduceDoubling, nullptr, nullptr, nullptr, &Tuning::doublingRange,
       &Tuning::tcpDoublingRange},
      // Below direct_min_bytes ordinary buffers, which most are, gain nothing from the direct
      // algorithms and pay their round of offers. Ordinary buffers above it that the all-reduce
      // would not pull (directPullPays; or with TUTTI_DIRECT_BUFFERS=registered) pay that round
      // and run the ring.
      {Collective::kAllReduce, "direct", nullptr, &Tuning::directMinBytes, true,
       directAllReduceCost, allreduceDirect},
      {Collective::kReduceScatter, "ring", nullptr, nullptr, false, ringCost, reduceScatterRing},
      {Collective::kReduceScatter, "direct", nullptr, &Tuning::directMinBytes, true, directCost,
       reduceScatterDirect},
      {Collective::kAllGather, "ring", nullptr, nullptr, false, ringCost, allgatherRing},
      {Collective::kAllGather, "direct", nullptr, &Tuning::directMinBytes, true, directCost,
       allgatherDirect},
      {Collective::kBroadcast, "chain", nullptr, nullptr, false, chainCost, broadcastChain},
      {Collective::kReduce, "chain", nullptr, nullptr, false, chainCost, reduceChain},
      {Collective::kAllToAll, "pairwise", nullptr, nullptr, false, ringCost, alltoallPairwise},
  };
  return table;
}

LinkModel linkModelOf(const Tuning& tuning, bool sharedMemory) {
  if (sharedMemory) return {tuning.shmStepUs, 1.0 / (tuning.shmGBs * 1000)};
  return {tuning.tcpStepUs, 1.0 / (tuning.tcpGBs * 1000)};
}

RankShape RankShape::flat(int ranks) {
  int depth = 0;
  for (int tree = 0; tree < 2; ++tree)
    depth = std::max(depth, topology::treeDepth(topology::binaryTree(ranks, tree)));
  return {ranks, depth};
}

Assessment assess(const Algorithm& algorithm, const Tuning& tuning, size_t bytes,
                  const RankShape& shape, bool sharedMemory, const LinkModel& link) {
  if (const auto maxBytes = algorithm.maxBytesOf(sharedMemory);
      maxBytes && bytes > tuning.*maxBytes)
    return {false, maxBytes, 0};
  if (algorithm.minBytes && bytes < tuning.*algorithm.minBytes)
    return {false, algorithm.minBytes, 0};
  if (algorithm.sharedMemoryOnly && !sharedMemory) return {false, nullptr, 0};
  if (const auto yields = algorithm.yieldsWithinOf(sharedMemory);
      yields && (tuning.*yields).covers(bytes))
    return {false, nullptr, 0, yields};
  const double cost = algorithm.costUs(bytes, shape, link.alphaUs, link.betaUsPerByte);
  if (const auto within = algorithm.runsWithinOf(sharedMemory)) {
    if (!(tuning.*within).covers(bytes)) return {false, nullptr, 0, within};
    return {true, nullptr, cost, nullptr, true};
  }
  return {true, nullptr, cost};
}

const Algorithm& cheapestAlgorithm(Collective collective, const Tuning& tuning, size_t bytes,
                                   const RankShape& shape, bool sharedMemory, const LinkModel& link,
                                   std::string_view skip) {
  const Algorithm* best = nullptr;
  double bestCost = std::numeric_limits<double>::infinity();
  for (const Algorithm& algorithm : algorithms()) {
    if (algorithm.collective != collective || algorithm.name == skip) continue;
    const Assessment assessment = assess(algorithm, tuning, bytes, shape, sharedMemory, link);
    if (!assessment.applies) continue;
    if (assessment.measured) return algorithm;
    if (assessment.costUs < bestCost) {
      bestCost = assessment.costUs;
      best = &algorithm;
    }
  }
  if (!best)
    raise(ErrorCode::kInternal, "no {} algorithm applies to {} bytes", collectiveName(collective),
          bytes);
  return *best;
}

// The memo keeps a pick per collective (pick_memo.hpp cannot see the enum).
static_assert(static_cast<size_t>(Collective::kAllToAll) < PickMemo::kCollectives);

const Algorithm& pickAlgorithm(Collective collective, size_t bytes, const GroupView& group,
                               std::string_view skip) {
  const Algorithm* forced = group.settings.algorithm;
  if (collective == Collective::kAllReduce && forced && forced->name != skip) return *forced;
  // Direct's fallback (a `skip`) is not remembered: it is a different question.
  if (const Algorithm* known = skip.empty() ? group.picks.find(collective, bytes) : nullptr)
    return *known;
  const Algorithm& cheapest = cheapestAlgorithm(collective, group.settings.tuning, bytes,
                                                {group.size, group.ring.treeDepth},
                                                allSharedMemory(group), linkModel(group), skip);
  if (skip.empty()) group.picks.remember(collective, bytes, cheapest);
  return cheapest;
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
  if (ctx.op != kernels::RedOp::kAvg || count == 0) return;
  // The ring's and the tree's last sends went out from the result itself (postFrom), and a TCP
  // frame the socket has not taken yet still points there: dividing first would send the peer
  // averaged values, which it would average again.
  ctx.drainSends();
  kernels::avgFinish(data, data, count, ctx.dtype, ctx.group.size);
}

}  // namespace tutti::runtime
