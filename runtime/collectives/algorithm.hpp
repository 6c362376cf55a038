// What an algorithm receives, and the table of algorithms: one entry per (collective, algorithm)
// with when it applies, its cost model and its entry point. The planner picks the cheapest entry
// that applies unless TUTTI_ALGO names one; tutti-bench --algo all measures them side by side.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/collectives/op_context.hpp"
#include "runtime/tuning/tuning.hpp"

namespace tutti::runtime {

enum class Collective { kAllReduce, kReduceScatter, kAllGather, kBroadcast, kReduce, kAllToAll };
const char* collectiveName(Collective collective);
// Whether the collective has a reduction operation (all-reduce, reduce-scatter, reduce), and a
// root (broadcast, reduce).
bool reduces(Collective collective);
bool rooted(Collective collective);

struct CollectiveArgs {
  const void* send;
  void* recv;
  size_t count;  // per the C API's meaning for the collective
  int root;
};

// The ranks a collective runs over, as the cost model sees them.
struct RankShape {
  int ranks;
  // The deeper of the communicator's two trees (topology::treeDepth): about log2(ranks) where the
  // trees are binary trees over the ranks (one host, or one rank per host); across hosts with
  // several ranks each, log2(hosts) plus the chain inside a host (topology::rankTree).
  int treeDepth;
  // Ranks all on one host, or each on its own: binary trees over them.
  static RankShape flat(int ranks);
};

struct Algorithm {
  Collective collective;
  const char* name;
  // The tuning table's largest and smallest message it applies to (nullptr: no bound), and
  // whether only communicators of one host over shm. maxBytes over shared memory; over TCP
  // tcpMaxBytes where set (maxBytesOf).
  size_t Tuning::*maxBytes;
  size_t Tuning::*minBytes;
  bool sharedMemoryOnly;
  // Estimated microseconds for `bytes` over the ranks of `shape`, with per-step latency alpha (us)
  // and per-byte time beta (us/byte) of the transport.
  double (*costUs)(size_t bytes, const RankShape& shape, double alpha, double beta);
  void (*run)(OpContext& ctx, const CollectiveArgs& args);
  size_t Tuning::*tcpMaxBytes = nullptr;
  // The sizes where it gives way to another algorithm that a sweep measured ahead, over shared
  // memory and over TCP (nullptr: none).
  SizeRange Tuning::*yieldsWithin = nullptr;
  SizeRange Tuning::*tcpYieldsWithin = nullptr;
  // The sizes where a sweep measured it ahead of every other, over shared memory and over TCP: it
  // runs there, whatever the cost model says, and nowhere else (nullptr: the model decides).
  SizeRange Tuning::*runsWithin = nullptr;
  SizeRange Tuning::*tcpRunsWithin = nullptr;

  // The bound on its size over shared memory or not (nullptr: none).
  size_t Tuning::*maxBytesOf(bool sharedMemory) const {
    return !sharedMemory && tcpMaxBytes ? tcpMaxBytes : maxBytes;
  }
  SizeRange Tuning::*yieldsWithinOf(bool sharedMemory) const {
    return sharedMemory ? yieldsWithin : tcpYieldsWithin;
  }
  SizeRange Tuning::*runsWithinOf(bool sharedMemory) const {
    return sharedMemory ? runsWithin : tcpRunsWithin;
  }
};

const std::vector<Algorithm>& algorithms();

// What one step (alpha) and one byte (beta) cost over the ranks' links.
struct LinkModel {
  double alphaUs;
  double betaUsPerByte;
};
// The tuning table's figures for shared memory or TCP, before the topology has its say.
LinkModel linkModelOf(const Tuning& tuning, bool sharedMemory);

// Whether `algorithm` applies to `bytes` over the ranks of `shape` (all on one host over shm, or
// not), and its cost when it does.
struct Assessment {
  bool applies;
  // Where it does not: the tuning table's bound the size is outside (tuningKeyOf names it), or
  // the range where it yields the size falls in, or the range it runs only within; both nullptr
  // where the algorithm is for shared memory only.
  size_t Tuning::*outside;
  double costUs;
  SizeRange Tuning::*yielded = nullptr;
  // Within its runsWithin range: measured ahead of the others, whatever the costs say.
  bool measured = false;
};
Assessment assess(const Algorithm& algorithm, const Tuning& tuning, size_t bytes,
                  const RankShape& shape, bool sharedMemory, const LinkModel& link);
// The cheapest algorithm of the table that applies, never the one named `skip`: the planner's
// choice without TUTTI_ALGO.
const Algorithm& cheapestAlgorithm(Collective collective, const Tuning& tuning, size_t bytes,
                                   const RankShape& shape, bool sharedMemory, const LinkModel& link,
                                   std::string_view skip = {});
// Direct all-reduce's pull (some output reached only through the kernel): whether it beats the
// ring for `bytes` over n ranks, in place when some rank is (allreduce_direct.cpp). `range` is
// the table's range that decided; nullptr where none could (in place with other than 2 ranks).
struct PullVerdict {
  bool pays;
  const SizeRange* range;
};
PullVerdict directPullPays(const Tuning& tuning, size_t bytes, int n, bool someInPlace);

// The algorithm to use: TUTTI_ALGO's choice for all-reduce when set, else the cheapest that
// applies; never the one named `skip` (direct's own fallback).
const Algorithm& pickAlgorithm(Collective collective, size_t bytes, const GroupView& group,
                               std::string_view skip = {});
// TUTTI_ALGO's default: the planner picks per call.
inline constexpr char kAutoAlgorithm[] = "auto";
// What TUTTI_ALGO and tutti_comm_set_algorithm accept: "auto", then the table's all-reduce
// algorithms.
std::vector<std::string> allReduceChoices();
// The all-reduce entry of the table that one of allReduceChoices() names (Settings::algorithm);
// nullptr for "auto". Any other name is kInternal: callers check it against the choices first,
// each with its own message.
const Algorithm* allReduceChoice(std::string_view name);

// Entry points, one file each.
void allreduceRing(OpContext& ctx, const CollectiveArgs& args);
void allreduceTree(OpContext& ctx, const CollectiveArgs& args);
void allreduceOneShot(OpContext& ctx, const CollectiveArgs& args);
void allreduceDoubling(OpContext& ctx, const CollectiveArgs& args);
void allreduceDirect(OpContext& ctx, const CollectiveArgs& args);
void reduceScatterDirect(OpContext& ctx, const CollectiveArgs& args);
void allgatherDirect(OpContext& ctx, const CollectiveArgs& args);
void reduceScatterRing(OpContext& ctx, const CollectiveArgs& args);
void allgatherRing(OpContext& ctx, const CollectiveArgs& args);
void broadcastChain(OpContext& ctx, const CollectiveArgs& args);
void reduceChain(OpContext& ctx, const CollectiveArgs& args);
void alltoallPairwise(OpContext& ctx, const CollectiveArgs& args);

// avg's last step on the rank's result, once no send reads it any more (a no-op for the other
// operations).
void finishAverage(OpContext& ctx, void* data, size_t count);

}  // namespace tutti::runtime
