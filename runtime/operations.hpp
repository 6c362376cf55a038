// The runtime's operations, as the C API calls them: validate (an invalid argument changes
// nothing and names rank, operation and sequence number), then run the operation blocking or
// hand it to the communicator's engine. Inside a group (groupStart/groupEnd) operations are
// collected and issued together when the group ends.
#pragma once

#include <cstddef>
#include <memory>

#include "kernels/kernels.hpp"
#include "runtime/collectives/algorithm.hpp"
#include "runtime/communicator.hpp"
#include "runtime/request.hpp"

namespace tutti::runtime {

struct CollectiveCall {
  Collective collective;
  const void* send;
  void* recv;
  size_t count;
  kernels::DataType dtype;
  kernels::RedOp op;  // reducing collectives
  int root;           // rooted collectives
};

// Returns the request when async, nullptr when it ran to completion. Inside a group it returns
// nullptr and the operation runs at groupEnd.
std::shared_ptr<Request> launch(Communicator& comm, const CollectiveCall& call, bool async);
std::shared_ptr<Request> barrier(Communicator& comm, bool async);
std::shared_ptr<Request> sendRecv(Communicator& comm, bool isSend, const void* sendBuffer,
                                  void* recvBuffer, size_t count, kernels::DataType dtype, int peer,
                                  bool async);
// A receive of `count` (> 0) elements from whichever other rank's send comes first (none is taken
// from the others); *source is that rank once it has completed.
std::shared_ptr<Request> recvAny(Communicator& comm, void* recvBuffer, size_t count,
                                 kernels::DataType dtype, int* source, bool async);

// Stream-ordered (`stream` is a CUstream): enqueued on the stream and queued on the engine, returns
// at once; a failure of the operation itself becomes the communicator's error (staged_buffers.hpp,
// gpu/stream_order.hpp).
void launchOnStream(Communicator& comm, const CollectiveCall& call, void* stream);
void sendRecvOnStream(Communicator& comm, bool isSend, const void* sendBuffer, void* recvBuffer,
                      size_t count, kernels::DataType dtype, int peer, void* stream);

void groupStart();
// Issues the group's operations; returns a request when async (one communicator only).
std::shared_ptr<Request> groupEnd(bool async);

}  // namespace tutti::runtime
