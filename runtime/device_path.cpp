#include "runtime/device_path.hpp"

#include <chrono>
#include <optional>
#include <string_view>
#include <thread>

#include "runtime/collectives/algorithm.hpp"
#include "runtime/gpu/device_ring.hpp"
#include "runtime/gpu/gpu.hpp"
#include "runtime/peer_watch.hpp"
#include "runtime/recorded.hpp"

namespace tutti::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// Whether `call` is an all-reduce that TUTTI_ALGO (or tutti_comm_set_algorithm) forces onto the
// tree.
bool treeForced(const Communicator& comm, const CollectiveCall& call) {
  const Algorithm* forced = comm.settings().algorithm;
  return call.collective == Collective::kAllReduce && forced &&
         std::string_view(forced->name) == "tree";
}

// The kernels' form of `call`: an all-reduce goes over the tree where it is forced, else
// everything over the ring.
gpu::RingCall ringCallOf(const Communicator& comm, const CollectiveCall& call) {
  const bool tree = treeForced(comm, call);
  return {static_cast<gpu::RingCollective>(call.collective),
          call.send,
          call.recv,
          call.count,
          call.dtype,
          call.op,
          call.root,
          tree};
}

// What ends a kernel's watch early: the communicator's failure or abort, a peer in trouble, a
// broken link proxy, a stall past the timeout (queued: its stream has not reached it; running: a
// peer's kernel never came); nullopt while none has happened.
std::optional<Error> reasonToAbort(Communicator& comm, const gpu::DeviceRing& ring,
                                   const gpu::KernelRun& run, const std::string& where,
                                   Clock::time_point& stallStart, gpu::KernelRun::State& seen) {
  if (const auto failure = comm.failure()) return failure;
  if (const auto broken = ring.linkFailure())
    return Error(ErrorCode::kRemote, fmt::format("{}: {}", where, broken->what()));
  if (const auto trouble = comm.peerWatch().look(-1, true))
    return describeTrouble(*trouble, comm.peer(trouble->peer), where,
                           "for its device kernels' peers");
  const gpu::KernelRun::State state = run.state();
  if (state != seen) {
    seen = state;
    stallStart = Clock::now();
  }
  const auto stall = comm.timeout();
  if (Clock::now() - stallStart <= stall) return std::nullopt;
  if (state == gpu::KernelRun::State::kQueued)
    return Error(ErrorCode::kTimeout,
                 fmt::format("{}: its stream did not reach it within {} ms (the work enqueued "
                             "before it has not finished)",
                             where, stall.count()));
  return Error(ErrorCode::kTimeout,
               fmt::format("{}: its device kernels did not finish within {} ms (a peer's kernel "
                           "never came to the ring?{})",
                           where, stall.count(), comm.peerWatch().stoppedLocalPeers()));
}

// The engine's side: waits for the kernel to end, aborting it when it must (the abort flag), and
// throws how it failed.
void watch(Communicator& comm, gpu::DeviceRing& ring, const gpu::KernelRun& run,
           const std::string& where) {
  std::optional<Error> failure;
  auto stallStart = Clock::now();
  gpu::KernelRun::State seen = gpu::KernelRun::State::kQueued;
  for (int polls = 0; run.state() != gpu::KernelRun::State::kDone; ++polls) {
    if (!failure) {
      failure = reasonToAbort(comm, ring, run, where, stallStart, seen);
      if (failure) {
        // Kept before the kernel is let go: whoever waits on its stream then finds the error.
        comm.recordFailure(*failure);
        ring.abort();
        stallStart = Clock::now();
      }
    } else if (Clock::now() - stallStart > comm.timeout()) {
      break;  // not even the abort flag ended it (a stream that never gets there): leave it
    }
    // Spin first (the small messages' latency), then back off.
    if (polls < 2000 && !comm.members().oversubscribed())
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  if (failure) throw *failure;
  if (!run.succeeded())
    raise(ErrorCode::kRemote, "{}: its device kernels ended before finishing (aborted)", where);
}

// The communicator's device ring, connected (and its tree, for a tree call). Connecting is
// collective and happens once: a rank that fails it is out of step with its peers for good, so
// the failure is the communicator's.
gpu::DeviceRing& connectedRing(Communicator& comm, int device, bool tree) {
  try {
    gpu::DeviceRing& ring = comm.device().ring(device);
    if (tree) ring.connectTree(Deadline::after(comm.timeout()));
    return ring;
  } catch (const Error& error) {
    comm.recordFailure(error);
    throw;
  }
}

}  // namespace

bool runsAsKernels(const Communicator& comm, const CollectiveCall& call) {
  if (!comm.settings().gpuKernels || comm.size() < 2 || call.collective == Collective::kAllToAll)
    return false;
  // The device tree has no link proxies: across hosts a forced tree is the host's, staged.
  if (treeForced(comm, call) && comm.members().localSize() != comm.size()) return false;
  return gpu::whyNoKernels().empty();
}

bool gpusRunKernels(Communicator& comm, int device) {
  return comm.device().kernelPlan(device).declined.empty();
}

bool kernelsConnected(Communicator& comm, const CollectiveCall& call) {
  const gpu::DeviceRing* ring = comm.device().connectedRing();
  return ring && (!treeForced(comm, call) || ring->treeConnected());
}

namespace {

// The engine's part of a launched kernel: watching it in the engine's turn, recorded.
Engine::Task watchTask(Communicator& comm, gpu::DeviceRing& ring,
                       std::shared_ptr<const gpu::KernelRun> run, const CollectiveCall& call,
                       bool tree, uint64_t sequence) {
  const char* algorithm = tree ? "device-tree" : "device-ring";
  std::string where = fmt::format("rank {}: {} #{} on the GPU", comm.rank(),
                                  collectiveName(call.collective), sequence);
  return [&comm, &ring, run = std::move(run), where = std::move(where), sequence, algorithm] {
    recorded(comm, sequence, [&] {
      comm.recorder().started(sequence, algorithm);
      watch(comm, ring, *run, where);
    });
  };
}

// A launch that failed may have left its kernel on the GPU (a failure after the enqueue) where a
// later release would let it run unwatched, and its peers' kernels wait for it: the
// communicator fails, and every kernel of the ring ends at the abort flag.
template <typename Launch>
auto launchedOrFailed(Communicator& comm, gpu::DeviceRing& ring, Launch launch) {
  try {
    return launch();
  } catch (const Error& error) {
    comm.recordFailure(error);
    ring.abort();
    throw;
  }
}

}  // namespace

std::vector<HeldKernel> holdAsKernels(Communicator& comm, std::span<const KernelCall> calls) {
  std::vector<HeldKernel> held;
  try {
    size_t first = 0;
    while (first < calls.size()) {
      std::vector<gpu::RingCall> batch{ringCallOf(comm, calls[first].call)};
      gpu::DeviceRing& ring = connectedRing(comm, calls[first].device, batch[0].tree);
      size_t end = first + 1;
      for (; end < calls.size(); ++end) {
        const gpu::RingCall next = ringCallOf(comm, calls[end].call);
        if (!ring.fusable(batch, next)) break;
        batch.push_back(next);
      }
      auto [run, ticket] = launchedOrFailed(comm, ring, [&] { return ring.launchHeld(batch); });
      for (size_t i = first; i < end; ++i)
        held.push_back(
            {&ring, ticket, run,
             watchTask(comm, ring, run, calls[i].call, batch[0].tree, calls[i].sequence)});
      first = end;
    }
  } catch (const Error& error) {
    const auto deadline = Clock::now() + comm.timeout();
    for (const HeldKernel& kernel : held) abandonKernel(comm, kernel, error, deadline);
    throw;
  }
  return held;
}

void abandonKernel(Communicator& comm, const HeldKernel& held, const Error& why,
                   Clock::time_point deadline) {
  comm.recordFailure(
      Error(ErrorCode::kInvalidUsage,
            fmt::format("rank {}: this communicator failed: a group was not run after its device "
                        "collectives were enqueued (their kernels were on the GPU already): {}",
                        comm.rank(), why.what())));
  held.ring->abort();
  while (held.run->state() != gpu::KernelRun::State::kDone && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::microseconds(50));
}

std::shared_ptr<Request> runAsKernels(Communicator& comm, const CollectiveCall& call, int device,
                                      uint64_t sequence, const OpSignature& signature, bool async,
                                      void* stream) {
  comm.recorder().queued(sequence, signature, async || stream);
  if (stream) {
    const gpu::RingCall ringCall = ringCallOf(comm, call);
    gpu::DeviceRing& ring = connectedRing(comm, device, ringCall.tree);
    auto run = launchedOrFailed(comm, ring, [&] { return ring.launch({&ringCall, 1}, stream); });
    comm.engine().submit(watchTask(comm, ring, std::move(run), call, ringCall.tree, sequence));
    return nullptr;
  }
  const KernelCall single{call, device, sequence};
  HeldKernel held = std::move(holdAsKernels(comm, {&single, 1}).front());
  Engine::Task task = [held = std::move(held)] {
    held.ring->release(held.ticket);
    held.watch();
  };
  if (async) return comm.engine().submit(std::move(task));
  comm.engine().run(std::move(task));
  return nullptr;
}

}  // namespace tutti::runtime
