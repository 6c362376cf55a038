// tutti-topo --predict: the all-reduce cost model's figures for the loaded topology, as
// nccl-tests' all_reduce_perf would report them (busbw by size), with the quickest algorithm.
#include <fmt/format.h>

#include <cmath>

#include "print.hpp"

namespace tutti::tools {
namespace {

// nccl-tests' size column: bytes in B, KiB, MiB or GiB.
std::string sizeName(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int unit = 0;
  while (unit < 3 && bytes >= 1024) {
    bytes /= 1024;
    ++unit;
  }
  return fmt::format("{:g} {}", bytes, units[unit]);
}

}  // namespace

std::string formatPrediction(const topology::Topology& topo) {
  topology::AllReduceCosts costs = topology::priceAllReduce(topo);
  if (costs.algorithms.empty())
    return fmt::format("no all-reduce to price: {} GPU(s) on {} host(s)\n", costs.ranks,
                       costs.hosts);
  std::string out = fmt::format("all-reduce over {} GPUs on {} host(s), busbw in GB/s:\n",
                                costs.ranks, costs.hosts);
  for (const topology::AlgorithmCost& algorithm : costs.algorithms)
    out += fmt::format("  {}: {} channels, busbw {:.1f} GB/s, latency {:.1f} us\n", algorithm.name,
                       algorithm.channels, algorithm.busBw, algorithm.latencyUs);
  out += fmt::format("{:>10}", "size");
  for (const topology::AlgorithmCost& algorithm : costs.algorithms)
    out += fmt::format("{:>10}", algorithm.name);
  out += "  best\n";
  for (double log2Bytes : {10, 16, 20, 24, 28, 30, 33}) {
    double bytes = std::pow(2.0, log2Bytes);
    out += fmt::format("{:>10}", sizeName(bytes));
    for (const topology::AlgorithmCost& algorithm : costs.algorithms)
      out += fmt::format("{:>10.2f}", algorithm.busBwAt(bytes, costs.ranks));
    out += fmt::format("  {}\n", costs.best(bytes)->name);
  }
  return out;
}

}  // namespace tutti::tools
