// One operation ordered on a CUDA stream, run by the host: on the stream, the device buffers are
// copied into pinned staging, then a host function tells the operation it may start (it only
// signals: host functions must not call CUDA or block), then the stream waits on a completion
// word in mapped host memory (cuStreamWaitValue32), which the host writes when the operation has
// finished or failed, then the results are copied back, then a last host function returns the
// staging memory. Nothing blocks the thread that enqueues.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <vector>

#include "runtime/gpu/pinned_pool.hpp"

namespace tutti::runtime::gpu {

// The stream an operation is ordered on, checked.
struct StreamTarget {
  void* stream = nullptr;   // CUstream
  void* context = nullptr;  // its CUcontext
  int device = -1;
};

// Checks `stream` (kInvalidArgument: NULL or the legacy default stream, not a stream the driver
// knows) and that its device can wait on memory from a stream (kInvalidUsage otherwise).
StreamTarget streamTarget(void* stream);

// Enqueues a copy between device buffers of the stream's device: a one-rank operation's whole
// work, with nothing for the host to wait for.
void copyOnStream(const StreamTarget& target, void* to, const void* from, size_t bytes);

// True once `target`'s stream has run everything enqueued on it so far, false if it has not
// within `wait` (polled: cuStreamQuery).
bool streamIdle(const StreamTarget& target, std::chrono::milliseconds wait);

struct StreamCopy {
  void* to;
  const void* from;
  size_t bytes;
};

class StreamOrder {
 public:
  // keepAlive holds what the stream uses until its last host function has run (the staging).
  StreamOrder(PinnedPool& pool, const StreamTarget& target, std::shared_ptr<const void> keepAlive);
  // Enqueues the whole protocol: the copies in (device to pinned), the start signal, the wait,
  // the copies out (pinned to device), the release. On failure it throws, and leaves the stream
  // free to go on.
  void enqueue(const std::vector<StreamCopy>& in, const std::vector<StreamCopy>& out);
  // The host's side: true once the stream has reached the operation (within `wait`).
  bool waitStarted(std::chrono::milliseconds wait) const;
  // Lets the stream go on; called when the operation ends, whether it succeeded or not.
  void complete() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
  StreamTarget target_;
};

}  // namespace tutti::runtime::gpu
