// The device data path inside a host (issue 18, item 2): each rank's kernel moves its slots GPU to
// GPU through FIFOs in GPU memory that its ring neighbour maps. A rank allocates the FIFOs it
// receives on (every channel, Simple and LL) as shared device memory, passes the descriptor to
// the rank before it in the ring over its fd mailbox, and maps the FIFOs of the rank after it,
// to which it sends. Every kernel of the ring is ordered after the one before it, whatever stream
// it is on, so that no two use the FIFOs at once; kernels check an abort flag in mapped host
// memory and write each channel's status there, which the host watches (KernelRun). No CUDA type
// in sight: the runtime includes this without cuda.h.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/auth.hpp"
#include "base/deadline.hpp"
#include "base/error.hpp"
#include "kernels/kernels.hpp"
#include "runtime/gpu/gpu_sharing.hpp"
#include "runtime/gpu/pinned_pool.hpp"

namespace tutti::runtime::gpu {

// The ring collectives, valued as kernels/device/launch.hpp's Collective.
enum class RingCollective : int { kAllReduce, kReduceScatter, kAllGather, kBroadcast, kReduce };

// One collective with the C API's buffers (root a rank, blocks by rank, whatever the ring's
// order).
struct RingCall {
  RingCollective collective;
  const void* send;
  void* recv;
  size_t count;
  kernels::DataType dtype;
  kernels::RedOp op;  // avg folds as sum: the caller divides
  int root;
  bool tree = false;  // an all-reduce over the members' trees (connectTree first), not the ring
};

// How the members of a ring that crosses hosts open their link proxies' sockets
// (ring_proxies.hpp).
struct ProxySockets {
  Secret secret;
  // The address to listen on (an interface the other hosts reach); asked only where a link
  // crosses.
  std::function<std::string()> bindHost;
  // Every member's address, [rank], given this rank's ("" where none of its links cross).
  std::function<std::vector<std::string>(const std::string&)> exchange;
  // Called while waiting for a peer; throws to give up (a member is gone). May be empty.
  std::function<void()> checkPeers;
};

// A communicator's ranks, and the ring they form. Links between ranks on one host go GPU to GPU;
// a link to another host goes through a pair of link proxies (ring_proxies.hpp), and a ring with
// such a link runs Simple only (LL's FIFOs cannot cross a proxy: fifo_proxy.hpp).
struct RingMembers {
  std::string job;  // unique to the communicator (its tag): names the fd mailboxes
  int rank;
  // The rings the channels run, each the ranks in ring order: channel c runs orders[c % size]
  // (planChannelRings: the communicator's CPU ring, or the GPUs' rings inside a host). A ring that
  // crosses hosts runs one order on every channel (its link proxies carry one ring).
  std::vector<std::vector<int>> orders;
  std::vector<pid_t> pids;         // [rank]
  std::vector<std::string> hosts;  // [rank]: where each runs (PeerInfo::hostId)
  // [rank]: its GPU's facts (KernelPlan::facts). A link inside a host whose writer's GPU cannot
  // reach the reader's memory (writesInPlace) has its FIFOs in pinned host memory instead.
  std::vector<GpuFacts> gpus;
  // [tree][rank]: each rank's parent in the trees the device tree all-reduce runs (-1 at the
  // root; at most kernels/device's kMaxPeers children each), channel c on tree c % size: the
  // communicator's double binary tree (CpuRing::trees, NCCL's), whose two trees share the
  // channels so that every rank is interior in about one.
  std::vector<std::vector<int>> treeParents;
  int device;                 // this rank's GPU
  int maxChannels;            // the kernel plan's (gpu_sharing.hpp), alike on every rank
  ProxySockets proxySockets;  // used where the ring crosses hosts
};

// One launched kernel, as its statuses in mapped host memory tell.
class KernelRun {
 public:
  enum class State { kQueued, kRunning, kDone };
  KernelRun(std::shared_ptr<PinnedPool::Lease> statuses, int nchannels);
  // kQueued until a channel has started, kDone once every channel has ended and everything the
  // operation enqueued after the kernel (avg's division) has run.
  State state() const;
  // Once done: whether every channel finished (not aborted, not out of its spin budget).
  bool succeeded() const;
  int channels() const { return nchannels_; }

 private:
  std::shared_ptr<PinnedPool::Lease> statuses_;
  int nchannels_;
};

class DeviceRing {
 public:
  // Connects this rank to its neighbours in the members' ring order (collective over the
  // members: each waits for its next's descriptor, or its proxy's socket); kTimeout naming the
  // rank at the deadline, kSystem when the driver refuses, kInternal when the order is not a
  // permutation of the ranks.
  DeviceRing(const RingMembers& members, PinnedPool& pool, const Deadline& deadline);
  // Sets the abort flag and waits up to `drainWait` for the kernels launched to end before the
  // FIFOs are unmapped; FIFOs a kernel may still use are left mapped, with a warning.
  ~DeviceRing();
  DeviceRing(const DeviceRing&) = delete;
  DeviceRing& operator=(const DeviceRing&) = delete;

  // Connects this rank to its parents and children in the members' trees (treeParents), once:
  // collective over the members, as the constructor; the tree's FIFOs (three pairs per channel)
  // are allocated then, not before a tree all-reduce needs them.
  // Members on one host only (kInternal otherwise): the tree has no link proxies.
  void connectTree(const Deadline& deadline);
  bool treeConnected() const;

  // Enqueues this rank's side of `calls` on `stream` (a CUstream of the members' device) as one
  // kernel, after the ring's previous kernel: they run one after the other on every channel
  // (fusable() says which may go together). kInvalidArgument when a call is not one the kernels
  // run, kInternal for calls that cannot share a launch.
  std::shared_ptr<const KernelRun> launch(std::span<const RingCall> calls, void* stream);
  // The same on the ring's own stream, after what the calling thread enqueued on its default
  // stream, held until the host calls release(ticket): the blocking and request forms, which run
  // in the engine's order. Returns the ticket with the run.
  std::pair<std::shared_ptr<const KernelRun>, uint32_t> launchHeld(std::span<const RingCall> calls);
  void release(uint32_t ticket);
  // Whether `next` may join `batch` (calls of one launch, in call order): the batch holds fewer
  // than kMaxWorks (kernels/device/launch.hpp) calls, all run the same kernel (the reducing
  // collectives of one dtype and op, avg as sum; or the copying ones) with one protocol, over the
  // same links (ring or tree), and no buffer of `next` overlaps one of the batch's. A group's
  // independent collectives go to the GPU in one launch (NCCL's aggregation), while one that
  // reads what an earlier one writes waits for its launch to end, as in call order. Where buffers
  // lie is this rank's affair, so peers may batch the same calls differently: each call runs alike
  // on every rank whatever launch holds it (its own protocol and channels).
  bool fusable(std::span<const RingCall> batch, const RingCall& next) const;

  // Every kernel running or to come (held ones included) ends at its next check, with kAborted.
  void abort();
  // What broke a link proxy (a peer on another host closed or garbled it), once one broke: the
  // kernels then wait for slots that will not come, and the watch aborts them.
  std::optional<Error> linkFailure() const;
  void setDrainWait(std::chrono::milliseconds wait) { drainWait_ = wait; }

  struct State;

 private:
  std::shared_ptr<State> state_;
  std::chrono::milliseconds drainWait_{1000};
};

}  // namespace tutti::runtime::gpu
