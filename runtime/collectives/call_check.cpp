#include "runtime/collectives/call_check.hpp"

#include <array>
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

void writeCall(ByteWriter& out, const CallSignature& call) {
  out.u32(call.collective)
      .u32(call.dtype)
      .u32(call.op)
      .i32(call.root)
      .u64(call.count)
      .u64(call.sequence)
      .u64(call.ordinal)
      .u64(call.algorithm);
}

CallSignature readCall(ByteReader& in) {
  CallSignature call;
  call.collective = in.u32();
  call.dtype = in.u32();
  call.op = in.u32();
  call.root = in.i32();
  call.count = in.u64();
  call.sequence = in.u64();
  call.ordinal = in.u64();
  call.algorithm = in.u64();
  return call;
}

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
  using Bytes = std::array<std::byte, kCallSignatureBytes>;
  const CallSignature& mine = ctx.call;
  const int n = ctx.group.size, self = ctx.group.rank;
  Bytes mineBytes{};
  ByteWriter out(mineBytes);
  writeCall(out, mine);
  std::vector<Bytes> theirs(static_cast<size_t>(n));
  std::vector<P2PTransfer> exchange;
  for (int peer = 0; peer < n; ++peer) {
    if (peer == self) continue;
    exchange.push_back({true, peer, mineBytes.data(), nullptr, mineBytes.size()});
    exchange.push_back(
        {false, peer, nullptr, theirs[static_cast<size_t>(peer)].data(), mineBytes.size()});
  }
  OpContext signatures = ctx;
  signatures.carries = Carries::kSignatures;
  runTransfers(signatures, exchange);
  for (int peer = 0; peer < n; ++peer) {
    if (peer == self) continue;
    const std::string what = fmt::format("rank {}'s call signature", peer);
    ByteReader in(theirs[static_cast<size_t>(peer)], ErrorCode::kRemote, what);
    const CallSignature call = readCall(in);
    in.end();
    requireSameCall(self, mine, peer, call);
  }
}

}  // namespace tutti::runtime
