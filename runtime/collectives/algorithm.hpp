// What an algorithm receives, and the table of algorithms: one entry per (collective, algorithm)
// with when it applies, its cost model and its entry point. The planner picks the cheapest entry
// that applies unless TUTTI_ALGO names one; tutti-bench --algo all measures them side by side.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/collectives/op_context.hpp"

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

struct Algorithm {
  Collective collective;
  const char* name;
  // Largest message (bytes) it applies to; 0 = any.
  size_t maxBytes;
  // Smallest message it applies to, and whether only communicators of one host over shm.
  size_t minBytes;
  bool sharedMemoryOnly;
  // Estimated microseconds for `bytes` over n ranks, with per-step latency alpha (us) and
  // per-byte time beta (us/byte) of the transport.
  double (*costUs)(size_t bytes, int n, double alpha, double beta);
  void (*run)(OpContext& ctx, const CollectiveArgs& args);
};

const std::vector<Algorithm>& algorithms();

// What one step (alpha) and one byte (beta) cost over the ranks' links.
struct LinkModel {
  double alphaUs;
  double betaUsPerByte;
};
// Measured on a 2-core machine (README, "Measured"): shm ~0.3 us per step, TCP loopback ~15 us;
// the bandwidths are the topology plan's defaults.
constexpr LinkModel kShmLinks{0.3, 1.0 / (kShmGBs * 1000)}, kTcpLinks{15.0, 1.0 / (kTcpGBs * 1000)};

// The cheapest algorithm of the table that applies to `bytes` over n ranks (all on one host over
// shm, or not), never the one named `skip`: the planner's choice without TUTTI_ALGO.
const Algorithm& cheapestAlgorithm(Collective collective, size_t bytes, int n, bool sharedMemory,
                                   const LinkModel& link, std::string_view skip = {});

// The algorithm to use: TUTTI_ALGO's choice for all-reduce when set, else the cheapest that
// applies; never the one named `skip` (direct's own fallback).
const Algorithm& pickAlgorithm(Collective collective, size_t bytes, const Communicator& comm,
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
void allreduceDirect(OpContext& ctx, const CollectiveArgs& args);
void reduceScatterDirect(OpContext& ctx, const CollectiveArgs& args);
void allgatherDirect(OpContext& ctx, const CollectiveArgs& args);
void reduceScatterRing(OpContext& ctx, const CollectiveArgs& args);
void allgatherRing(OpContext& ctx, const CollectiveArgs& args);
void broadcastChain(OpContext& ctx, const CollectiveArgs& args);
void reduceChain(OpContext& ctx, const CollectiveArgs& args);
void alltoallPairwise(OpContext& ctx, const CollectiveArgs& args);

// avg's last step on the rank's result (a no-op for the other operations).
void finishAverage(OpContext& ctx, void* data, size_t count);

}  // namespace tutti::runtime
