// The proxy of a link between ranks on different hosts (issue 18, item 3): the device kernels send
// into and receive from FIFOs in memory the host reaches (pinned host memory the GPU maps), and
// the proxy moves their slots over a byte stream to the peer's proxy (a TCP socket), so that a
// kernel never waits on a socket. Per channel c, the slots this side's kernels publish into
// outgoing[c] reach the peer's incoming[c], and the peer's outgoing[c] reach this side's
// incoming[c] (full duplex, one socket; either direction may be empty: a ring's link between the
// processes of two hosts is one way, and a two-rank ring's two links share one socket).
//
// Flow control is by credits, as NCCL's network proxy posts receives only into free slots: a slot
// goes out only when the peer's incoming FIFO has room for it, as the tail that the peer's
// kernels advanced (sent back as a credit) says; so the receiving proxy always has a free slot to
// read a frame into, and one full channel never holds up the others on the socket. A sent slot
// is freed at once (its bytes are in the socket's buffer). Both directions keep counting across
// operations, as the FIFOs' counters do.
//
// Two threads: one writes (data as the kernels publish it, credits as they free slots), one
// reads (data into incoming slots, then publishes their heads; credits). Frames are checked: a
// peer that sends a channel, step or credit out of order, or closes the link without saying
// goodbye, fails it (failure(), and the socket is shut down so that the peer's proxy fails too),
// which the host's watch turns into the kernels' abort. A side that closes in good order (close())
// first sends what its kernels published, then a goodbye, after which the peer's proxy ends
// without a failure: a rank whose kernel finished may still have slots its peer's kernel needs.
//
// Simple protocol only (kernels/device/simple.hpp): a proxy waits for a slot's head, released
// after its data. LL publishes no head with that ordering (its flags are in the data), so its
// FIFOs must not cross a proxy.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "base/socket.hpp"
#include "kernels/device/fifo.hpp"

namespace tutti::runtime::gpu {

class FifoProxy {
 public:
  // Takes the connected `socket`; outgoing and incoming have a FIFO per channel (either may be
  // empty: a link one way), all of one geometry and fresh (counters at 0). The peer's must
  // mirror them (its outgoing this side's incoming, and back), same geometry: a first exchange
  // checks it (kRemote naming `peerName` when it differs, kTimeout at the deadline). Then the
  // threads start.
  FifoProxy(Fd socket, std::vector<kernels::device::Fifo> outgoing,
            std::vector<kernels::device::Fifo> incoming, std::string peerName,
            const Deadline& deadline);
  // Sends every slot the kernels published, as the peer's credits allow, then the goodbye; waits
  // at most `wait` for that (a peer whose kernels no longer take slots gives no credit).
  void close(std::chrono::milliseconds wait);
  // Stops both threads (the socket shut down); slots not sent by close() are dropped.
  ~FifoProxy();
  FifoProxy(const FifoProxy&) = delete;
  FifoProxy& operator=(const FifoProxy&) = delete;

  // What broke the link (the peer closed it, sent a frame out of order), once it is broken.
  std::optional<Error> failure() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
  std::thread writer_, reader_;
};

}  // namespace tutti::runtime::gpu
