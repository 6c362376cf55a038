// The primitives every algorithm is written in (NCCL's vocabulary). Each moves one slot's worth of
// elements (at most OpContext::slotElems()): it takes the next slot from each `from` peer and the
// rank's own `src`, reduces them (or copies, when there is a single input), and writes the result
// to `dst` and into a fresh slot to each `to` peer. Slots are FIFOs, so successive calls pipeline:
// while this rank reduces chunk k, its peers already move chunks k+1...
#pragma once

#include <cstddef>
#include <span>

#include "runtime/collectives/op_context.hpp"

namespace tutti::runtime {

struct Step {
  std::span<const int> from;
  const void* src = nullptr;
  void* dst = nullptr;
  std::span<const int> to;
};

// At most this many peers on either side of one step: a tree node's children, at most three (a
// chain head's next rank and two other hosts' heads).
constexpr size_t kMaxStepPeers = 4;

// Inputs are folded in the order from[0], from[1], ..., src: every rank that computes an element
// computes it the same way, and each element is computed once and then copied, so results are
// bitwise identical across ranks.
void transfer(OpContext& ctx, const Step& step, size_t elems);

inline void send(OpContext& ctx, int to, const void* src, size_t elems) {
  transfer(ctx, {{}, src, nullptr, {&to, 1}}, elems);
}
inline void recv(OpContext& ctx, int from, void* dst, size_t elems) {
  transfer(ctx, {{&from, 1}, nullptr, dst, {}}, elems);
}
inline void recvReduceSend(OpContext& ctx, int from, const void* src, int to, size_t elems) {
  transfer(ctx, {{&from, 1}, src, nullptr, {&to, 1}}, elems);
}
inline void recvReduceCopy(OpContext& ctx, int from, const void* src, void* dst, size_t elems) {
  transfer(ctx, {{&from, 1}, src, dst, {}}, elems);
}
inline void recvReduceCopySend(OpContext& ctx, int from, const void* src, void* dst, int to,
                               size_t elems) {
  transfer(ctx, {{&from, 1}, src, dst, {&to, 1}}, elems);
}
inline void recvCopySend(OpContext& ctx, int from, void* dst, int to, size_t elems) {
  transfer(ctx, {{&from, 1}, nullptr, dst, {&to, 1}}, elems);
}

}  // namespace tutti::runtime
