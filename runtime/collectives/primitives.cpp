#include "runtime/collectives/primitives.hpp"

#include <array>

namespace tutti::runtime {

void transfer(OpContext& ctx, const Step& step, size_t elems) {
  if (elems == 0) return;
  const size_t bytes = elems * ctx.typeSize();
  // Where the result sits in this process's own memory, if anywhere: the destination, or the
  // rank's data itself when it is the only input. A connection that sends in place (tcp) takes
  // it from there instead of from a slot written for it.
  const void* local = step.dst ? step.dst : (step.from.empty() ? step.src : nullptr);
  std::array<const void*, kMaxStepPeers + 1> inputs{};
  std::array<void*, kMaxStepPeers + 1> outputs{};
  std::array<bool, kMaxStepPeers> fromLocal{};
  int ninputs = 0, noutputs = 0;
  // A lone message from a connection that receives in place lands in the destination at once
  // (no slot to copy out of); the destination is then the step's only input.
  const bool receiveInPlace = step.from.size() == 1 && !step.src && step.dst &&
                              ctx.group.connections.recvFrom(step.from[0]).receivesInPlace();
  if (receiveInPlace) {
    ctx.receiveInto(step.from[0], step.dst, bytes);
    inputs[static_cast<size_t>(ninputs++)] = step.dst;
  } else {
    for (int peer : step.from) inputs[static_cast<size_t>(ninputs++)] = ctx.peek(peer, bytes);
  }
  if (step.src) inputs[static_cast<size_t>(ninputs++)] = step.src;
  if (step.dst) outputs[static_cast<size_t>(noutputs++)] = step.dst;
  for (size_t i = 0; i < step.to.size(); ++i) {
    fromLocal[i] = local && ctx.group.connections.sendTo(step.to[i]).sendsInPlace();
    if (!fromLocal[i]) outputs[static_cast<size_t>(noutputs++)] = ctx.acquire(step.to[i]);
  }

  if (ninputs > 1) {
    kernels::reduce(outputs.data(), noutputs, inputs.data(), ninputs, elems, ctx.dtype, ctx.op,
                    ctx.stores);
  } else {
    // A lone input that already is a destination (in-place) is not copied onto itself.
    int ncopies = 0;
    for (int i = 0; i < noutputs; ++i)
      if (outputs[static_cast<size_t>(i)] != inputs[0])
        outputs[static_cast<size_t>(ncopies++)] = outputs[static_cast<size_t>(i)];
    if (ncopies > 0) kernels::copy(outputs.data(), ncopies, inputs[0], bytes, ctx.stores);
  }
  for (size_t i = 0; i < step.to.size(); ++i) {
    if (fromLocal[i])
      ctx.postFrom(step.to[i], local, bytes);
    else
      ctx.post(step.to[i], bytes);
  }
  if (!receiveInPlace)
    for (int peer : step.from) ctx.release(peer);
}

}  // namespace tutti::runtime
