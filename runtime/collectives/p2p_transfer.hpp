// One send or receive of a batch of point-to-point transfers (p2p.hpp), apart so that the engine
// can queue them without knowing how they run.
#pragma once

#include <cstddef>

namespace tutti::runtime {

// The peer of a receive that takes the first message any other rank sends (MPI_ANY_SOURCE).
inline constexpr int kAnySource = -1;

struct P2PTransfer {
  bool isSend;
  int peer;                // or kAnySource (a receive)
  const void* sendBuffer;  // isSend
  void* recvBuffer;        // !isSend
  size_t bytes;
  int* source = nullptr;  // kAnySource: where the rank it received from is written
};

}  // namespace tutti::runtime
