#include "runtime/collectives/call_check.hpp"

#include <vector>

#include "runtime/collectives/algorithm.hpp"
#include "runtime/collectives/p2p.hpp"

namespace tutti::runtime {
namespace {

// "allreduce(count=1024, float32, sum) as call #17"; root only where it matters.
std::string describeCall(const CallSignature& call) {
  std::string text;
  if (call.collective == kPointToPointCall) {
    text = "send/recv";
  } else if (call.collective == kBarrierCall) {
    text = "barrier";
  } else {
    const auto collective = static_cast<Collective>(call.collective);
    const auto dtype = static_cast<kernels::DataType>(call.dtype);
    text = fmt::format("{}(count={}, {}", collectiveName(collective), call.count,
                       kernels::isValid(dtype) ? kernels::typeName(dtype) : "?");
    if (reduces(collective)) {
      const auto op = static_cast<kernels::RedOp>(call.op);
      text += fmt::format(", {}", kernels::isValid(op) ? kernels::opName(op) : "?");
    }
    if (rooted(collective)) text += fmt::format(", root={}", call.root);
    text += ")";
  }
  if (call.sequence == 0) {
    if (call.collective != kPointToPointCall)
      text += fmt::format(" as collective #{}", call.ordinal);
    return text;
  }
  text += fmt::format(" as call #{}", call.sequence);
  if (call.collective != kPointToPointCall && call.ordinal != call.sequence)
    text += fmt::format(" (collective #{})", call.ordinal);
  return text;
}

std::string algorithmName(uint64_t index) {
  return index < algorithms().size() ? algorithms()[index].name : "?";
}

}  // namespace

bool CallSignature::operator==(const CallSignature& other) const {
  return collective == other.collective && dtype == other.dtype && op == other.op &&
         root == other.root && count == other.count && ordinal == other.ordinal &&
         algorithm == other.algorithm;
}

std::string differentCalls(int self, const CallSignature& mine, int peer,
                           const CallSignature& theirs) {
  CallSignature otherwiseSame = theirs;
  otherwiseSame.algorithm = mine.algorithm;
  if (otherwiseSame == mine)
    return fmt::format(
        "rank {} runs {} by {}; rank {} by {}: the ranks were given different algorithms "
        "(tutti_comm_set_algorithm)",
        self, describeCall(mine), algorithmName(mine.algorithm), peer,
        algorithmName(theirs.algorithm));
  return fmt::format("rank {} called {}; rank {} called {}", self, describeCall(mine), peer,
                     describeCall(theirs));
}

void requireSameCall(int self, const CallSignature& mine, int peer, const CallSignature& theirs) {
  if (theirs != mine)
    raise(ErrorCode::kInvalidUsage, "{}", differentCalls(self, mine, peer, theirs));
}

void checkSameCall(OpContext& ctx) {
  const CallSignature& mine = ctx.call;
  const int n = ctx.comm.size(), self = ctx.comm.rank();
  std::vector<CallSignature> theirs(static_cast<size_t>(n));
  std::vector<P2PTransfer> exchange;
  for (int peer = 0; peer < n; ++peer) {
    if (peer == self) continue;
    exchange.push_back({true, peer, &mine, nullptr, sizeof(mine)});
    exchange.push_back({false, peer, nullptr, &theirs[static_cast<size_t>(peer)], sizeof(mine)});
  }
  OpContext signatures = ctx;
  signatures.carries = Carries::kSignatures;
  runTransfers(signatures, exchange);
  for (int peer = 0; peer < n; ++peer)
    if (peer != self) requireSameCall(self, mine, peer, theirs[static_cast<size_t>(peer)]);
}

}  // namespace tutti::runtime
