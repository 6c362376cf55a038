#include "runtime/call_buffers.hpp"

namespace tutti::runtime {

BufferUse bufferUse(const CollectiveCall& call, int nranks, int rank) {
  const size_t block = call.count * kernels::typeSize(call.dtype);
  const size_t whole = block * static_cast<size_t>(nranks);
  const bool isRoot = call.root == rank;
  const BufferRange send{call.send, block, "sendbuf"};
  const BufferRange recv{call.recv, block, "recvbuf"};
  const BufferRange none{};
  switch (call.collective) {
    case Collective::kAllReduce: return {send, recv};
    case Collective::kReduceScatter: {
      // In place, the rank's block of the input is its output.
      const BufferRange written =
          call.send == call.recv
              ? BufferRange{static_cast<const char*>(call.recv) + block * static_cast<size_t>(rank),
                            block, "recvbuf"}
              : recv;
      return {{call.send, whole, "sendbuf"}, written};
    }
    case Collective::kAllGather: return {send, {call.recv, whole, "recvbuf"}};
    case Collective::kBroadcast: return {isRoot ? send : none, recv};
    case Collective::kReduce: return {send, isRoot ? recv : none};
    case Collective::kAllToAll:
      return {{call.send, whole, "sendbuf"}, {call.recv, whole, "recvbuf"}};
  }
  return {};
}

}  // namespace tutti::runtime
