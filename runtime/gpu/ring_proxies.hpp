// The link proxies of a device ring whose neighbours run on other hosts (issue 18, item 3). A link
// that crosses hosts has FIFOs in pinned host memory at both ends: the sender's kernel publishes
// into its own, the receiver's kernel takes from its own, and a FifoProxy pair moves the slots
// between them over TCP. Each rank with a crossing link listens; the ranks swap their addresses
// through the bootstrap store (collective, whether or not a rank's links cross: every rank knows
// where the others run, so every rank takes part); then one socket joins each pair of
// neighbours on different hosts (both links of a two-rank ring share it), proven with the job's
// secret and introduced by a hello exactly as the tcp transport's sockets are
// (transport/tcp/tcp_connect.hpp), under a job tag of its own, so that a stranger cannot feed a
// kernel and a data socket cannot be taken for a proxy's.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/deadline.hpp"
#include "kernels/device/fifo.hpp"
#include "runtime/gpu/device_ring.hpp"
#include "runtime/gpu/fifo_proxy.hpp"

namespace tutti::runtime::gpu {

// This rank's links that cross hosts, as the host sees their FIFOs (a FIFO per channel): those it
// receives on from `prev`, those it sends on to `next`; empty where the link stays on the host.
struct CrossingLinks {
  int prev = -1, next = -1;
  std::vector<kernels::device::Fifo> fromPrev, toNext;
};

// A running proxy per neighbour on another host (none where no link of this rank crosses), for a
// ring of `nranks`. Collective over the ring's members. kTimeout naming the missing peer at the
// deadline; kRemote for a neighbour that published no address or one that is not "host:port", or
// whose FIFOs do not mirror this rank's.
std::vector<std::unique_ptr<FifoProxy>> connectProxies(const std::string& job, int rank, int nranks,
                                                       const CrossingLinks& links,
                                                       const ProxySockets& sockets,
                                                       const Deadline& deadline);

}  // namespace tutti::runtime::gpu
