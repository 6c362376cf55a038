// tutti-bench tune: the tuning table's sizes read off a sweep of the fixed all-reduce algorithms
// (allreduce --algo all, ordinary buffers): up to where one-shot runs, and where the direct
// all-reduce (forced on every rank, so pulling through the kernel at every size) replaces the
// ring and the tree, out of place and in place. Each is where the algorithm gained most over the
// ring and the tree, summed over the sizes as log time ratios: a lone noisy sample moves no
// threshold that many sizes agree on. The cost model's step latency and bandwidth of the sweep's
// transport are fitted to the ring's times. The other keys come from `base`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bench/results.hpp"
#include "runtime/tuning/tuning.hpp"

namespace tutti::bench {

struct Crossovers {
  runtime::Tuning table;
  std::vector<std::string> notes;  // what the sweep did not show, one line each
};

// The link the sweep's ranks used: shm for shm, or the default on one host; tcp for tcp, or the
// default across hosts; nullopt where it cannot tell (ucx). True for tcp.
std::optional<bool> overTcp(const Results& results);

// Throws std::runtime_error when the rows lack an algorithm the table needs or share no size.
Crossovers crossovers(const Results& results, const runtime::Tuning& base);

}  // namespace tutti::bench
