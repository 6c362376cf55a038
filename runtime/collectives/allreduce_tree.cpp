// Double binary tree all-reduce: the buffer's first half is reduced up tree 0 and broadcast back
// down it, the second half likewise on tree 1, so every rank sends and receives about the same
// amount. The trees are the communicator's (CpuRing::trees, topology/double_tree.hpp): NCCL's
// double binary tree across hosts with a chain inside each, or over the ranks on a single host.
//
// Slot-sized slices are pipelined. At iteration i a rank reduces slice i of each tree (children's
// partial sums + its own data) and sends it up; the root writes the final value instead. At the
// same iteration it handles the downward flow of slice i-lag: it receives the final slice from
// its parent (the root uses the value it wrote), writes it and sends it to its children. Every
// message is sent and received at the same (iteration, phase) on both ends, so the FIFOs, shared
// by both trees and directions, always deliver in the order they are read; the lag lets a slice
// climb while later ones are reduced.
#include <algorithm>
#include <vector>

#include "runtime/collectives/algorithm.hpp"
#include "runtime/collectives/chunking.hpp"
#include "runtime/collectives/primitives.hpp"

namespace tutti::runtime {

void allreduceTree(OpContext& ctx, const CollectiveArgs& args) {
  const size_t r = static_cast<size_t>(ctx.group.rank);
  const size_t size = ctx.typeSize();
  const char* src = static_cast<const char*>(args.send);
  char* dst = static_cast<char*>(args.recv);
  const std::array<std::vector<topology::TreeNode>, 2>& trees = ctx.group.ring.trees;
  const std::array<Range, 2> halves{evenSplit(args.count, 2, 0), evenSplit(args.count, 2, 1)};
  const size_t slotElems = ctx.slotElems();
  const std::array<Sections, 2> slices{Sections(halves[0].count, 1, slotElems),
                                       Sections(halves[1].count, 1, slotElems)};
  const size_t iterations = std::max(slices[0].size(), slices[1].size());
  const size_t lag = static_cast<size_t>(std::max(1, ctx.group.settings.slots / 4));

  auto up = [&](int t, size_t i) {
    if (i >= slices[t].size()) return;
    const topology::TreeNode& node = trees[t][r];
    const Range slice = slices[t].chunk(i, 0);
    const size_t offset = (halves[t].offset + slice.offset) * size;
    const std::span<const int> children(node.children);
    if (node.parent >= 0)
      transfer(ctx, {children, src + offset, nullptr, {&node.parent, 1}}, slice.count);
    else
      transfer(ctx, {children, src + offset, dst + offset, {}}, slice.count);
  };
  auto down = [&](int t, size_t i) {
    if (i >= slices[t].size()) return;
    const topology::TreeNode& node = trees[t][r];
    const Range slice = slices[t].chunk(i, 0);
    char* out = dst + (halves[t].offset + slice.offset) * size;
    const std::span<const int> children(node.children);
    if (node.parent >= 0)
      transfer(ctx, {{&node.parent, 1}, nullptr, out, children}, slice.count);
    else if (!children.empty())
      transfer(ctx, {{}, out, nullptr, children}, slice.count);
  };

  for (size_t i = 0; i < iterations + lag; ++i) {
    if (i < iterations) {
      up(0, i);
      up(1, i);
    }
    if (i >= lag) {
      down(0, i - lag);
      down(1, i - lag);
    }
  }
  finishAverage(ctx, dst, args.count);
}

}  // namespace tutti::runtime
