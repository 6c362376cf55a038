#include "runtime/collectives/primitives.hpp"

#include <array>

namespace tutti::runtime {

void transfer(OpContext& ctx, const Step& step, size_t elems) {
  if (elems == 0) return;
  const size_t bytes = elems * ctx.typeSize();
  std::array<const void*, kMaxStepPeers + 1> inputs{};
  std::array<void*, kMaxStepPeers + 1> outputs{};
  int ninputs = 0, noutputs = 0;
  for (int peer : step.from) inputs[static_cast<size_t>(ninputs++)] = ctx.peek(peer, bytes);
  if (step.src) inputs[static_cast<size_t>(ninputs++)] = step.src;
  if (step.dst) outputs[static_cast<size_t>(noutputs++)] = step.dst;
  for (int peer : step.to) outputs[static_cast<size_t>(noutputs++)] = ctx.acquire(peer);

  if (ninputs > 1) {
    kernels::reduce(outputs.data(), noutputs, inputs.data(), ninputs, elems, ctx.dtype, ctx.op);
  } else {
    // A lone input that already is a destination (in-place) is not copied onto itself.
    int ncopies = 0;
    for (int i = 0; i < noutputs; ++i)
      if (outputs[static_cast<size_t>(i)] != inputs[0])
        outputs[static_cast<size_t>(ncopies++)] = outputs[static_cast<size_t>(i)];
    if (ncopies > 0) kernels::copy(outputs.data(), ncopies, inputs[0], bytes);
  }
  for (int peer : step.to) ctx.post(peer, bytes);
  for (int peer : step.from) ctx.release(peer);
}

}  // namespace tutti::runtime
