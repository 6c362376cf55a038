// One send or receive of a batch of point-to-point transfers (p2p.hpp), apart so that the engine
// can queue them without knowing how they run.
#pragma once

#include <cstddef>

namespace tutti::runtime {

struct P2PTransfer {
  bool isSend;
  int peer;
  const void* sendBuffer;  // isSend
  void* recvBuffer;        // !isSend
  size_t bytes;
};

}  // namespace tutti::runtime
