#include "runtime/operations.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "runtime/call_buffers.hpp"
#include "runtime/collectives/call_check.hpp"
#include "runtime/collectives/p2p.hpp"
#include "runtime/device_path.hpp"
#include "runtime/gpu/stream_order.hpp"
#include "runtime/invalid_call.hpp"
#include "runtime/recorded.hpp"

namespace tutti::runtime {
namespace {

// ---- validation -------------------------------------------------------------------------------

void checkType(const Communicator& comm, const char* what, kernels::DataType dtype) {
  if (!kernels::isValid(dtype))
    invalidCall(comm, what, fmt::format("invalid data type {}", static_cast<int>(dtype)));
}

void checkOp(const Communicator& comm, const char* what, kernels::RedOp op) {
  if (!kernels::isValid(op))
    invalidCall(comm, what, fmt::format("invalid reduction operation {}", static_cast<int>(op)));
}

// Bytes of `count` elements times `blocks`, or an error when that overflows.
size_t checkedBytes(const Communicator& comm, const char* what, size_t count,
                    kernels::DataType dtype, size_t blocks) {
  const size_t size = kernels::typeSize(dtype);
  if (count > SIZE_MAX / size / blocks)
    invalidCall(comm, what, fmt::format("count {} x {} bytes x {} overflows", count, size, blocks));
  return count * size * blocks;
}

void checkBuffer(const Communicator& comm, const char* what, const void* buffer, const char* name,
                 size_t bytes) {
  if (!buffer && bytes > 0)
    invalidCall(comm, what, fmt::format("{} is NULL with {} bytes to move", name, bytes));
}

void checkRank(const Communicator& comm, const char* what, int value, const char* name) {
  if (value < 0 || value >= comm.size())
    invalidCall(comm, what, fmt::format("{} {} is out of range [0, {})", name, value, comm.size()));
}

bool overlaps(const void* a, size_t aBytes, const void* b, size_t bBytes) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return aBytes > 0 && bBytes > 0 && x < y + bBytes && y < x + aBytes;
}

// Checks a call and returns the bytes it moves per rank (for messages and planning).
size_t validate(const Communicator& comm, const CollectiveCall& call) {
  const char* what = collectiveName(call.collective);
  checkType(comm, what, call.dtype);
  const size_t n = static_cast<size_t>(comm.size());
  const bool isRoot = call.root == comm.rank();
  switch (call.collective) {
    case Collective::kAllReduce: {
      checkOp(comm, what, call.op);
      const size_t bytes = checkedBytes(comm, what, call.count, call.dtype, 1);
      checkBuffer(comm, what, call.send, "sendbuf", bytes);
      checkBuffer(comm, what, call.recv, "recvbuf", bytes);
      if (call.send != call.recv && overlaps(call.send, bytes, call.recv, bytes))
        invalidCall(comm, what, "sendbuf and recvbuf overlap without being equal");
      return bytes;
    }
    case Collective::kReduceScatter: {
      checkOp(comm, what, call.op);
      const size_t block = checkedBytes(comm, what, call.count, call.dtype, 1);
      const size_t whole = checkedBytes(comm, what, call.count, call.dtype, n);
      checkBuffer(comm, what, call.send, "sendbuf", whole);
      checkBuffer(comm, what, call.recv, "recvbuf", block);
      if (call.send != call.recv && overlaps(call.send, whole, call.recv, block))
        invalidCall(comm, what, "sendbuf and recvbuf overlap without being equal");
      return whole;
    }
    case Collective::kAllGather: {
      const size_t block = checkedBytes(comm, what, call.count, call.dtype, 1);
      const size_t whole = checkedBytes(comm, what, call.count, call.dtype, n);
      checkBuffer(comm, what, call.send, "sendbuf", block);
      checkBuffer(comm, what, call.recv, "recvbuf", whole);
      const char* inPlace =
          static_cast<const char*>(call.recv) + block * static_cast<size_t>(comm.rank());
      if (call.send != inPlace && overlaps(call.send, block, call.recv, whole))
        invalidCall(comm, what, "sendbuf overlaps recvbuf but is not recvbuf + rank * sendcount");
      return whole;
    }
    case Collective::kBroadcast: {
      checkRank(comm, what, call.root, "root");
      const size_t bytes = checkedBytes(comm, what, call.count, call.dtype, 1);
      if (isRoot) checkBuffer(comm, what, call.send, "sendbuf", bytes);
      checkBuffer(comm, what, call.recv, "recvbuf", bytes);
      return bytes;
    }
    case Collective::kReduce: {
      checkOp(comm, what, call.op);
      checkRank(comm, what, call.root, "root");
      const size_t bytes = checkedBytes(comm, what, call.count, call.dtype, 1);
      checkBuffer(comm, what, call.send, "sendbuf", bytes);
      if (isRoot) checkBuffer(comm, what, call.recv, "recvbuf", bytes);
      return bytes;
    }
    case Collective::kAllToAll: {
      const size_t whole = checkedBytes(comm, what, call.count, call.dtype, n);
      checkBuffer(comm, what, call.send, "sendbuf", whole);
      checkBuffer(comm, what, call.recv, "recvbuf", whole);
      if (call.send != call.recv && overlaps(call.send, whole, call.recv, whole))
        invalidCall(comm, what, "sendbuf and recvbuf overlap without being equal");
      return whole;
    }
  }
  invalidCall(comm, what, "unknown collective");
}

// ---- execution --------------------------------------------------------------------------------

// A single rank has nobody to talk to: every collective's result is its input, which `move`
// carries over (memmove for host memory, a copy on the device for device memory).
template <typename Move>
void runAlone(const CollectiveCall& call, Move&& move) {
  if (call.recv && call.send && call.send != call.recv)
    move(call.recv, call.send, call.count * kernels::typeSize(call.dtype));
}

using Task = Engine::Task;

OpSignature signatureOf(const CollectiveCall& call, size_t bytes, uint64_t collectiveSeq) {
  return {.collective = collectiveName(call.collective),
          .count = call.count,
          .dtype = static_cast<int>(call.dtype),
          .op = reduces(call.collective) ? static_cast<int>(call.op) : -1,
          .root = rooted(call.collective) ? call.root : -1,
          .bytes = bytes,
          .collectiveSeq = collectiveSeq};
}

void runCollective(Communicator& comm, const CollectiveCall& call, size_t bytes, uint64_t sequence,
                   uint64_t ordinal) {
  comm.throwIfFailed();
  if (comm.size() == 1) {
    comm.recorder().started(sequence, "self");
    return runAlone(
        call, [](void* to, const void* from, size_t bytes) { std::memmove(to, from, bytes); });
  }
  const Autotune::Turn turn = comm.autotune().turn(call.collective, bytes, comm.view());
  const Algorithm& algorithm = *turn.algorithm;
  comm.recorder().started(sequence, algorithm.name);
  const CallSignature signature{static_cast<uint32_t>(call.collective),
                                static_cast<uint32_t>(call.dtype),
                                static_cast<uint32_t>(call.op),
                                call.root,
                                call.count,
                                sequence,
                                ordinal,
                                static_cast<uint64_t>(&algorithm - algorithms().data())};
  OpContext ctx(comm, {.collective = collectiveName(call.collective),
                       .algorithm = algorithm.name,
                       .sequence = sequence,
                       .bytes = bytes,
                       .dtype = call.dtype,
                       .op = call.op,
                       .call = signature});
  if (comm.settings().checkCalls) checkSameCall(ctx);
  CollectiveArgs args{call.send, call.recv, call.count, call.root};
  // In-place reduce-scatter writes the rank's block of the input.
  if (call.collective == Collective::kReduceScatter && call.send == call.recv)
    args.recv = static_cast<char*>(call.recv) +
                call.count * kernels::typeSize(call.dtype) * static_cast<size_t>(comm.rank());
  // Only a trial's calls read the clock.
  const auto start =
      turn.trial ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  algorithm.run(ctx, args);
  ctx.drainSends();
  if (turn.trial) Autotune::finish(turn, start, ctx);
}

// The lambda itself, not a Task: a blocking call runs it inline (Engine::run) without the
// allocation a std::function of its captures would cost on every small all-reduce.
auto collectiveTask(Communicator& comm, const CollectiveCall& call, size_t bytes, uint64_t sequence,
                    uint64_t ordinal) {
  return [&comm, call, bytes, sequence, ordinal] {
    recorded(comm, sequence, [&] { runCollective(comm, call, bytes, sequence, ordinal); });
  };
}

// The call with its device buffers replaced by their pinned staging.
CollectiveCall onStaging(const CollectiveCall& call, const StagedBuffers& staged) {
  CollectiveCall staging = call;
  staging.send = staged.map(call.send);
  staging.recv = staged.map(call.recv);
  return staging;
}

// A collective on device buffers: copied into pinned memory, run there, copied back.
Task stagedCollectiveTask(Communicator& comm, const CollectiveCall& call, size_t bytes,
                          uint64_t sequence, uint64_t ordinal,
                          std::shared_ptr<const StagedBuffers> staged) {
  return [&comm, call = onStaging(call, *staged), bytes, sequence, ordinal,
          staged = std::move(staged)] {
    recorded(comm, sequence, [&] {
      staged->copyIn();
      runCollective(comm, call, bytes, sequence, ordinal);
      staged->copyOut();
    });
  };
}

// One rank's collective on device buffers: copied on the device, nothing staged.
Task aloneOnDeviceTask(Communicator& comm, const CollectiveCall& call, uint64_t sequence,
                       const gpu::BufferKind& device) {
  return [&comm, call, sequence, device] {
    recorded(comm, sequence, [&] {
      comm.throwIfFailed();
      comm.recorder().started(sequence, "self");
      runAlone(call, [&](void* to, const void* from, size_t bytes) {
        gpu::copyOnDevice(to, from, bytes, device);
      });
    });
  };
}

// ---- groups -----------------------------------------------------------------------------------

struct GroupItem {
  Communicator* comm;
  uint64_t sequence;
  std::vector<P2PTransfer> transfers;           // point-to-point, or
  Task task;                                    // anything else
  std::shared_ptr<const StagedBuffers> staged;  // a transfer's device buffer
  gpu::StreamTarget stream;  // stream-ordered (stream.stream set): staged copies on the stream
  // A device collective: launched at the group's end (pending until then, task empty), with the
  // others of its communicator that may share its kernel; held until the group runs.
  std::optional<KernelCall> pending = {};
  std::optional<HeldKernel> kernel = {};
};

// Where a group is not run after all: its held kernels fail their communicators. One wait for
// them all, bounded by the longest timeout of their communicators.
void abandonKernels(const std::vector<GroupItem>& items, const Error& why) {
  auto deadline = std::chrono::steady_clock::now();
  for (const GroupItem& item : items)
    if (item.kernel)
      deadline = std::max(deadline, std::chrono::steady_clock::now() + item.comm->timeout());
  for (const GroupItem& item : items)
    if (item.kernel) abandonKernel(*item.comm, *item.kernel, why, deadline);
}

struct Group {
  int depth = 0;
  std::vector<GroupItem> items;
  // The first call of the group that failed: groupEnd reports it too and runs nothing, so a
  // caller that checks only the group's end still learns of it.
  std::optional<Error> failure;
  // The streams of host-ordered stream forms (hostOrdered), waited for at the group's end.
  std::vector<std::pair<Communicator*, gpu::StreamTarget>> hostOrdered;
};

thread_local Group group;

// Inside a group the task waits for groupEnd; otherwise it runs now or goes to the engine.
template <typename F>
std::shared_ptr<Request> issue(Communicator& comm, uint64_t sequence, const OpSignature& signature,
                               F&& task, bool async) {
  comm.recorder().queued(sequence, signature, async || group.depth > 0);
  if (group.depth > 0) {
    group.items.push_back({&comm, sequence, {}, Task(std::forward<F>(task)), nullptr, {}, {}, {}});
    return nullptr;
  }
  if (async) return comm.engine().submit(Task(std::forward<F>(task)));
  comm.engine().run(std::forward<F>(task));
  return nullptr;
}

// Runs a batch of transfers that ends its task: the asynchronous sends and receives queued behind
// it on the engine join it, so that they progress together (their requests end with the batch).
void runJoinedBy(Communicator& comm, OpContext& ctx, const std::vector<P2PTransfer>& batch) {
  std::vector<Engine::Joined> joined;
  auto join = [&] {
    std::vector<P2PTransfer> more;
    for (Engine::Joined& next : comm.engine().takeJoining()) {
      comm.recorder().started(next.transfers.sequence, "p2p");
      more.insert(more.end(), next.transfers.transfers.begin(), next.transfers.transfers.end());
      joined.push_back(std::move(next));
    }
    return more;
  };
  try {
    runTransfers(ctx, batch, join);
    ctx.drainSends();
  } catch (const Error& error) {
    // The joined requests' callers see the failure now, before ctx ends (p2p sends copy into
    // slots today, so this holds the rule for a batch that ever sends in place).
    ctx.letGoOfCallerMemory();
    for (const Engine::Joined& next : joined) {
      comm.recorder().failed(next.transfers.sequence, error);
      next.request->fail(error);
    }
    throw;
  }
  for (const Engine::Joined& next : joined) {
    comm.recorder().finished(next.transfers.sequence);
    next.request->complete();
  }
}

// Consecutive transfers of a group run as one batch, so that they progress together.
void runGroupItems(Communicator& comm, const std::vector<GroupItem>& items) {
  comm.throwIfFailed();
  size_t i = 0;
  while (i < items.size()) {
    if (items[i].task) {
      // A run of device kernels goes to the GPU at once (the highest ticket releases the lower
      // ones); the staged items around it run in call order, before and after it.
      if (items[i].kernel && (i == 0 || !items[i - 1].kernel)) {
        size_t last = i;
        while (last + 1 < items.size() && items[last + 1].kernel) ++last;
        items[last].kernel->ring->release(items[last].kernel->ticket);
      }
      items[i].task();
      ++i;
      continue;
    }
    std::vector<P2PTransfer> batch;
    size_t bytes = 0;
    const size_t first = i;
    for (; i < items.size() && !items[i].task; ++i) {
      comm.recorder().started(items[i].sequence, "p2p");
      if (items[i].staged && !items[i].stream.stream) items[i].staged->copyIn();
      for (const P2PTransfer& t : items[i].transfers) {
        batch.push_back(t);
        bytes += t.bytes;
      }
    }
    OpContext ctx(comm, {"send/recv",
                         "p2p",
                         items[first].sequence,
                         bytes,
                         kernels::DataType::kUint8,
                         kernels::RedOp::kSum,
                         {.collective = kPointToPointCall, .sequence = items[first].sequence}});
    if (i == items.size()) {
      runJoinedBy(comm, ctx, batch);
    } else {
      runTransfers(ctx, batch);
      ctx.drainSends();
    }
    for (size_t done = first; done < i; ++done) {
      if (items[done].staged && !items[done].stream.stream) items[done].staged->copyOut();
      comm.recorder().finished(items[done].sequence);
    }
  }
}

// A failure marks every operation of the group that has not ended.
Task groupTask(Communicator& comm, std::vector<GroupItem> items) {
  return [&comm, items = std::move(items)] {
    try {
      runGroupItems(comm, items);
    } catch (const Error& error) {
      for (const GroupItem& item : items) comm.recorder().failed(item.sequence, error);
      // Kernels of the group still held or running would wait for peers that gave up.
      abandonKernels(items, error);
      throw;
    } catch (const std::exception& error) {
      abandonKernels(items, Error(ErrorCode::kInternal, error.what()));
      throw;
    }
  };
}

// Runs a call; inside a group, its failure is also kept for groupEnd.
template <typename Call>
std::shared_ptr<Request> remembered(Call call) {
  try {
    return call();
  } catch (const Error& error) {
    if (group.depth > 0 && !group.failure) group.failure = error;
    throw;
  }
}

std::shared_ptr<Request> launchNow(Communicator& comm, const CollectiveCall& call, bool async) {
  const size_t bytes = validate(comm, call);
  const BufferUse use = bufferUse(call, comm.size(), comm.rank());
  const auto device = devicePlacement(comm, collectiveName(call.collective), use);
  comm.throwIfFailed();
  const uint64_t sequence = comm.counts().nextSequence(), ordinal = comm.counts().nextCollective();
  const OpSignature signature = signatureOf(call, bytes, ordinal);
  if (!device)
    return issue(comm, sequence, signature, collectiveTask(comm, call, bytes, sequence, ordinal),
                 async);
  if (comm.size() == 1)
    return issue(comm, sequence, signature, aloneOnDeviceTask(comm, call, sequence, *device),
                 async);
  const bool kernels = device->kind == gpu::MemoryKind::kDevice && runsAsKernels(comm, call);
  if (kernels && group.depth == 0 && gpusRunKernels(comm, device->device))
    return runAsKernels(comm, call, device->device, sequence, signature, async, nullptr);
  if (kernels && group.depth > 0 && kernelsConnected(comm, call)) {
    comm.recorder().queued(sequence, signature, true);
    group.items.push_back(
        {&comm, sequence, {}, {}, nullptr, {}, KernelCall{call, device->device, sequence}, {}});
    return nullptr;
  }
  auto staged = std::make_shared<const StagedBuffers>(comm.device().stagingPool(), use, *device);
  return issue(comm, sequence, signature,
               stagedCollectiveTask(comm, call, bytes, sequence, ordinal, std::move(staged)),
               async);
}

void runBarrier(Communicator& comm, uint64_t sequence, uint64_t ordinal) {
  comm.throwIfFailed();
  comm.recorder().started(sequence, "oneshot");
  if (comm.size() == 1) return;
  uint8_t token = 1;
  OpContext ctx(comm, {"barrier",
                       "oneshot",
                       sequence,
                       1,
                       kernels::DataType::kUint8,
                       kernels::RedOp::kMax,
                       {.collective = kBarrierCall, .sequence = sequence, .ordinal = ordinal}});
  allreduceOneShot(ctx, {&token, &token, 1, 0});
  ctx.drainSends();
}

std::shared_ptr<Request> barrierNow(Communicator& comm, bool async) {
  comm.throwIfFailed();
  const uint64_t sequence = comm.counts().nextSequence();
  const uint64_t ordinal = comm.counts().nextCollective();
  auto task = [&comm, sequence, ordinal] {
    recorded(comm, sequence, [&] { runBarrier(comm, sequence, ordinal); });
  };
  return issue(comm, sequence, {"barrier", 0, -1, -1, -1, 0, ordinal}, std::move(task), async);
}

constexpr const char* kRecvAny = "recv_any";

// recvAny passes `source`; a plain send or receive does not.
const char* sendRecvName(bool isSend, const int* source) {
  return isSend ? "send" : source ? kRecvAny : "recv";
}

// What a receive from any source needs besides a receive's arguments: somewhere to say which rank
// sent, a message to take (a send of 0 elements sends none) and another rank to send it.
void checkAnySource(const Communicator& comm, size_t count, const int* source) {
  const char* what = kRecvAny;
  if (!source) invalidCall(comm, what, "source is NULL: the rank received from is written there");
  if (count == 0) invalidCall(comm, what, "count 0: a send of 0 elements sends no message to take");
  if (comm.size() == 1) invalidCall(comm, what, "there is no other rank to receive from");
}

// Checks a send or receive and returns the bytes it touches. `source` is recvAny's (peer
// kAnySource, checked by checkAnySource), nullptr for the others.
BufferUse checkSendRecv(const Communicator& comm, bool isSend, const void* sendBuffer,
                        const void* recvBuffer, size_t count, kernels::DataType dtype, int peer,
                        const int* source = nullptr) {
  const char* what = sendRecvName(isSend, source);
  checkType(comm, what, dtype);
  if (!source) checkRank(comm, what, peer, "peer");
  if (peer == comm.rank() && group.depth == 0)
    invalidCall(comm, what, "a send to or receive from this rank itself must be inside a group");
  const size_t bytes = checkedBytes(comm, what, count, dtype, 1);
  const BufferRange buffer{isSend ? sendBuffer : recvBuffer, bytes, isSend ? "sendbuf" : "recvbuf"};
  checkBuffer(comm, what, buffer.data, buffer.name, bytes);
  return isSend ? BufferUse{buffer, {}} : BufferUse{{}, buffer};
}

std::shared_ptr<Request> sendRecvNow(Communicator& comm, bool isSend, const void* sendBuffer,
                                     void* recvBuffer, size_t count, kernels::DataType dtype,
                                     int peer, bool async, int* source = nullptr) {
  const char* what = sendRecvName(isSend, source);
  const BufferUse use =
      checkSendRecv(comm, isSend, sendBuffer, recvBuffer, count, dtype, peer, source);
  const size_t bytes = isSend ? use.read.bytes : use.written.bytes;
  const auto device = devicePlacement(comm, what, use);
  comm.throwIfFailed();
  auto staged =
      device ? std::make_shared<const StagedBuffers>(comm.device().stagingPool(), use, *device)
             : nullptr;
  if (staged) {
    sendBuffer = staged->map(sendBuffer);
    recvBuffer = staged->map(recvBuffer);
  }
  const uint64_t sequence = comm.counts().nextSequence();
  GroupItem item{
      &comm, sequence, {{isSend, peer, sendBuffer, recvBuffer, bytes, source}}, {}, staged, {}, {}};
  const OpSignature signature{what, count, static_cast<int>(dtype), -1, peer, bytes, 0};
  if (group.depth > 0) {
    comm.recorder().queued(sequence, signature, true);
    group.items.push_back(std::move(item));
    return nullptr;
  }
  std::vector<P2PTransfer> transfers = item.transfers;
  std::vector<GroupItem> single;
  single.push_back(std::move(item));
  Task task = groupTask(comm, std::move(single));
  // A staged transfer copies before and after it runs, which a batch that takes it over would skip.
  if (!async || staged) return issue(comm, sequence, signature, std::move(task), async);
  comm.recorder().queued(sequence, signature, true);
  return comm.engine().submitJoining(std::move(task), {sequence, std::move(transfers)});
}

// ---- stream order -----------------------------------------------------------------------------

// Until the stream has reached the operation (`reached`: true once it has, polled for at most
// the time it is given); bounded by the communicator's timeout, ended by its failure or abort.
void waitForStream(Communicator& comm,
                   const std::function<bool(std::chrono::milliseconds)>& reached,
                   const std::string& what) {
  const std::chrono::milliseconds stall = comm.timeout();
  const auto deadline = std::chrono::steady_clock::now() + stall;
  while (!reached(std::chrono::milliseconds(10))) {
    comm.throwIfFailed();
    if (std::chrono::steady_clock::now() > deadline)
      raise(ErrorCode::kTimeout,
            "rank {}: {}: its stream did not reach it within {} ms (the work enqueued before "
            "it has not finished)",
            comm.rank(), what, stall.count());
  }
}

void waitForStreamOnHost(Communicator& comm, const gpu::StreamTarget& target, const char* what) {
  waitForStream(
      comm, [&](std::chrono::milliseconds wait) { return gpu::streamIdle(target, wait); }, what);
}

// The checks every stream form makes once its arguments are valid: the driver, the stream, the
// buffers; the stream, checked.
gpu::StreamTarget checkOnStream(Communicator& comm, const char* what, const BufferUse& use,
                                void* stream) {
  gpu::requireDriver();
  const gpu::StreamTarget target = gpu::streamTarget(stream);
  checkStreamPlacement(comm, what, use, target.device);
  comm.throwIfFailed();
  return target;
}

// checkOnStream, then the staging of the touched buffers, or nullptr when nothing is touched
// (then nothing is enqueued).
std::shared_ptr<const StagedBuffers> stageOnStream(Communicator& comm, const char* what,
                                                   const BufferUse& use, gpu::StreamTarget& target,
                                                   void* stream) {
  target = checkOnStream(comm, what, use, stream);
  if (use.read.bytes == 0 && use.written.bytes == 0) return nullptr;
  return std::make_shared<const StagedBuffers>(
      comm.device().stagingPool(), use,
      gpu::BufferKind{gpu::MemoryKind::kDevice, target.device, target.context});
}

using StagedList = std::vector<std::shared_ptr<const StagedBuffers>>;

// Enqueues the stream's side of the operations staged in `staged`: every copy in, the start
// signal, the wait, every copy out, the release.
gpu::StreamOrder enqueueOnStream(Communicator& comm, const gpu::StreamTarget& target,
                                 const StagedList& staged) {
  gpu::StreamOrder order(comm.device().stagingPool(), target, std::make_shared<StagedList>(staged));
  std::vector<gpu::StreamCopy> in, out;
  for (const auto& buffers : staged) {
    const BufferUse& use = buffers->use();
    if (use.read.bytes > 0)
      in.push_back({buffers->map(use.read.data), use.read.data, use.read.bytes});
    if (use.written.bytes > 0)
      out.push_back(
          {const_cast<void*>(use.written.data), buffers->map(use.written.data), use.written.bytes});
  }
  order.enqueue(in, out);
  return order;
}

// The host's side of a stream-ordered operation: waits for the stream, runs `body` (which runs the
// operation on the staging and records how it ended), and writes the completion word whatever
// the outcome. A failed wait is recorded for every operation in `sequences`; a failure is the
// communicator's before the completion word is written, so that whoever synchronizes the stream
// then finds it (tutti_comm_get_async_error).
Task orderedTask(Communicator& comm, gpu::StreamOrder order, const char* what,
                 std::vector<uint64_t> sequences, Task body) {
  return [&comm, order = std::move(order), what, sequences = std::move(sequences),
          body = std::move(body)] {
    struct Complete {
      const gpu::StreamOrder& order;
      ~Complete() { order.complete(); }
    } complete{order};
    try {
      try {
        waitForStream(
            comm, [&](std::chrono::milliseconds wait) { return order.waitStarted(wait); },
            fmt::format("{} #{}", what, sequences.front()));
      } catch (const Error& error) {
        for (const uint64_t sequence : sequences) comm.recorder().failed(sequence, error);
        throw;
      }
      body();
    } catch (const Error& error) {
      comm.recordFailure(error);
      throw;
    } catch (const std::exception& error) {
      comm.recordFailure(Error(ErrorCode::kInternal, error.what()));
      throw;
    }
  };
}

// Outside a group: enqueued on the stream and queued on the engine now. Inside: kept for groupEnd,
// which orders the group's operations on their stream together.
void issueOnStream(Communicator& comm, const char* what, const gpu::StreamTarget& target,
                   std::shared_ptr<const StagedBuffers> staged, GroupItem item,
                   const OpSignature& signature) {
  if (group.depth > 0) {
    comm.recorder().queued(item.sequence, signature, true);
    item.staged = std::move(staged);
    item.stream = target;
    group.items.push_back(std::move(item));
    return;
  }
  gpu::StreamOrder order = enqueueOnStream(comm, target, {staged});
  comm.recorder().queued(item.sequence, signature, true);
  const uint64_t sequence = item.sequence;
  Task body = item.task;
  if (!body) {
    std::vector<GroupItem> single;
    single.push_back(std::move(item));
    body = groupTask(comm, std::move(single));
  }
  comm.engine().submit(orderedTask(comm, std::move(order), what, {sequence}, std::move(body)));
}

// A stream form where the rank's stream may share hardware queues with a peer's
// (DeviceSide::hostOrdersStreams): the call waits for its stream (inside a group: the group's end
// does), then runs as the blocking form, so that nothing of the operation waits on a stream.
void hostOrdered(Communicator& comm, const char* what, const BufferUse& use, void* stream,
                 const std::function<void()>& blocking) {
  const gpu::StreamTarget target = checkOnStream(comm, what, use, stream);
  if (group.depth > 0) {
    group.hostOrdered.push_back({&comm, target});
  } else {
    waitForStreamOnHost(comm, target, what);
  }
  blocking();
}

// One rank outside a group: the copy goes on the stream, and the host has nothing to run.
void aloneOnStream(Communicator& comm, const CollectiveCall& call, size_t bytes, void* stream) {
  const gpu::StreamTarget target = checkOnStream(comm, collectiveName(call.collective),
                                                 bufferUse(call, comm.size(), comm.rank()), stream);
  const uint64_t sequence = comm.counts().nextSequence(), ordinal = comm.counts().nextCollective();
  comm.recorder().queued(sequence, signatureOf(call, bytes, ordinal), true);
  recorded(comm, sequence, [&] {
    comm.recorder().started(sequence, "self");
    runAlone(call, [&](void* to, const void* from, size_t count) {
      gpu::copyOnStream(target, to, from, count);
    });
  });
}

void launchOnStreamNow(Communicator& comm, const CollectiveCall& call, void* stream) {
  const size_t bytes = validate(comm, call);
  if (comm.size() == 1 && group.depth == 0) return aloneOnStream(comm, call, bytes, stream);
  const char* what = collectiveName(call.collective);
  if (group.depth == 0 && runsAsKernels(comm, call)) {
    const gpu::StreamTarget target =
        checkOnStream(comm, what, bufferUse(call, comm.size(), comm.rank()), stream);
    if (gpusRunKernels(comm, target.device)) {
      const uint64_t sequence = comm.counts().nextSequence(),
                     ordinal = comm.counts().nextCollective();
      runAsKernels(comm, call, target.device, sequence, signatureOf(call, bytes, ordinal), true,
                   target.stream);
      return;
    }
  }
  if (comm.device().hostOrdersStreams())
    return hostOrdered(comm, what, bufferUse(call, comm.size(), comm.rank()), stream,
                       [&] { launchNow(comm, call, false); });
  gpu::StreamTarget target;
  auto staged =
      stageOnStream(comm, what, bufferUse(call, comm.size(), comm.rank()), target, stream);
  if (!staged) return;
  const uint64_t sequence = comm.counts().nextSequence(), ordinal = comm.counts().nextCollective();
  GroupItem item{&comm,   sequence,
                 {},      collectiveTask(comm, onStaging(call, *staged), bytes, sequence, ordinal),
                 nullptr, {},
                 {}};
  issueOnStream(comm, what, target, std::move(staged), std::move(item),
                signatureOf(call, bytes, ordinal));
}

void sendRecvOnStreamNow(Communicator& comm, bool isSend, const void* sendBuffer, void* recvBuffer,
                         size_t count, kernels::DataType dtype, int peer, void* stream) {
  const char* what = isSend ? "send" : "recv";
  const BufferUse use = checkSendRecv(comm, isSend, sendBuffer, recvBuffer, count, dtype, peer);
  if (comm.device().hostOrdersStreams())
    return hostOrdered(comm, what, use, stream, [&] {
      sendRecvNow(comm, isSend, sendBuffer, recvBuffer, count, dtype, peer, false);
    });
  gpu::StreamTarget target;
  auto staged = stageOnStream(comm, what, use, target, stream);
  if (!staged) return;
  const size_t bytes = isSend ? use.read.bytes : use.written.bytes;
  const uint64_t sequence = comm.counts().nextSequence();
  GroupItem item{
      &comm, sequence, {{isSend, peer, staged->map(sendBuffer), staged->map(recvBuffer), bytes}},
      {},    nullptr,  {},
      {}};
  issueOnStream(comm, what, target, std::move(staged), std::move(item),
                {what, count, static_cast<int>(dtype), -1, peer, bytes, 0});
}

// A group's operations of one communicator on a stream: all of them, on one stream.
std::optional<gpu::StreamTarget> groupStream(const std::vector<GroupItem>& mine) {
  const auto onStream = [](const GroupItem& item) { return item.stream.stream != nullptr; };
  const auto first = std::find_if(mine.begin(), mine.end(), onStream);
  if (first == mine.end()) return std::nullopt;
  for (const GroupItem& item : mine)
    if (item.stream.stream != first->stream.stream)
      raise(ErrorCode::kInvalidUsage,
            "rank {}: a group's operations of one communicator are all on one stream or none: #{} "
            "is on {}, #{} on {}",
            item.comm->rank(), first->sequence, first->stream.stream, item.sequence,
            item.stream.stream ? fmt::format("{}", item.stream.stream) : "no stream");
  return first->stream;
}

// Launches one communicator's pending device collectives, held: each run of consecutive ones
// together (holdAsKernels fuses what may share a kernel). A launch that fails fails every item
// and abandons the kernels launched before it.
void launchPendingKernels(Communicator& comm, std::vector<GroupItem>& mine) {
  try {
    size_t first = 0;
    while (first < mine.size()) {
      if (!mine[first].pending) {
        ++first;
        continue;
      }
      std::vector<KernelCall> calls;
      size_t end = first;
      for (; end < mine.size() && mine[end].pending; ++end) calls.push_back(*mine[end].pending);
      std::vector<HeldKernel> held = holdAsKernels(comm, calls);
      for (size_t i = first; i < end; ++i) {
        mine[i].task = held[i - first].watch;
        mine[i].kernel = std::move(held[i - first]);
      }
      first = end;
    }
  } catch (const Error& error) {
    for (const GroupItem& item : mine) comm.recorder().failed(item.sequence, error);
    abandonKernels(mine, error);
    throw;
  }
}

// Submits the group's operations of one communicator; a request to wait for unless they are
// ordered on a stream.
std::shared_ptr<Request> submitGroup(Communicator& comm, std::vector<GroupItem> mine,
                                     const std::optional<gpu::StreamTarget>& stream) {
  if (!stream) return comm.engine().submit(groupTask(comm, std::move(mine)));
  StagedList staged;
  std::vector<uint64_t> sequences;
  for (const GroupItem& item : mine) {
    staged.push_back(item.staged);
    sequences.push_back(item.sequence);
  }
  gpu::StreamOrder order = enqueueOnStream(comm, *stream, staged);
  comm.engine().submit(orderedTask(comm, std::move(order), "group", std::move(sequences),
                                   groupTask(comm, std::move(mine))));
  return nullptr;
}

}  // namespace

std::shared_ptr<Request> launch(Communicator& comm, const CollectiveCall& call, bool async) {
  return remembered([&] { return launchNow(comm, call, async); });
}

std::shared_ptr<Request> barrier(Communicator& comm, bool async) {
  return remembered([&] { return barrierNow(comm, async); });
}

std::shared_ptr<Request> sendRecv(Communicator& comm, bool isSend, const void* sendBuffer,
                                  void* recvBuffer, size_t count, kernels::DataType dtype, int peer,
                                  bool async) {
  return remembered(
      [&] { return sendRecvNow(comm, isSend, sendBuffer, recvBuffer, count, dtype, peer, async); });
}

std::shared_ptr<Request> recvAny(Communicator& comm, void* recvBuffer, size_t count,
                                 kernels::DataType dtype, int* source, bool async) {
  return remembered([&] {
    checkAnySource(comm, count, source);
    return sendRecvNow(comm, false, nullptr, recvBuffer, count, dtype, kAnySource, async, source);
  });
}

void launchOnStream(Communicator& comm, const CollectiveCall& call, void* stream) {
  remembered([&] {
    launchOnStreamNow(comm, call, stream);
    return nullptr;
  });
}

void sendRecvOnStream(Communicator& comm, bool isSend, const void* sendBuffer, void* recvBuffer,
                      size_t count, kernels::DataType dtype, int peer, void* stream) {
  remembered([&] {
    sendRecvOnStreamNow(comm, isSend, sendBuffer, recvBuffer, count, dtype, peer, stream);
    return nullptr;
  });
}

void groupStart() {
  ++group.depth;
}

std::shared_ptr<Request> groupEnd(bool async) {
  if (group.depth == 0) raise(ErrorCode::kInvalidUsage, "group end without a matching group start");
  if (--group.depth > 0) return nullptr;
  std::vector<GroupItem> items = std::move(group.items);
  group.items.clear();
  const auto hostOrderedStreams = std::move(group.hostOrdered);
  group.hostOrdered.clear();
  if (group.failure) {
    const Error failure(group.failure->code(),
                        fmt::format("the group was not run: {}", group.failure->what()));
    group.failure.reset();
    for (const GroupItem& item : items) item.comm->recorder().failed(item.sequence, failure);
    abandonKernels(items, failure);
    throw failure;
  }
  // One task per communicator, all submitted before any is waited for: a thread that drives
  // several ranks' communicators (a thread world) must start them all.
  std::vector<Communicator*> comms;
  for (const GroupItem& item : items)
    if (std::find(comms.begin(), comms.end(), item.comm) == comms.end()) comms.push_back(item.comm);
  if (async && comms.size() > 1) {
    const Error refused(
        ErrorCode::kInvalidUsage,
        fmt::format("an asynchronous group end covers one communicator; this group used {}",
                    comms.size()));
    for (const GroupItem& item : items) item.comm->recorder().failed(item.sequence, refused);
    abandonKernels(items, refused);
    throw refused;
  }
  std::vector<std::vector<GroupItem>> perComm;
  std::vector<std::optional<gpu::StreamTarget>> streams;
  for (Communicator* comm : comms) {
    std::vector<GroupItem>& mine = perComm.emplace_back();
    for (GroupItem& item : items)
      if (item.comm == comm) mine.push_back(std::move(item));
  }
  // Every communicator's stream checked, and those of host-ordered stream forms waited for,
  // before anything is enqueued or submitted.
  try {
    for (const std::vector<GroupItem>& mine : perComm) streams.push_back(groupStream(mine));
    for (const auto& [comm, target] : hostOrderedStreams)
      waitForStreamOnHost(*comm, target, "group");
  } catch (const Error& error) {
    for (const std::vector<GroupItem>& mine : perComm) {
      for (const GroupItem& item : mine) item.comm->recorder().failed(item.sequence, error);
      abandonKernels(mine, error);
    }
    throw;
  }
  std::vector<std::shared_ptr<Request>> requests;
  for (size_t c = 0; c < comms.size(); ++c) {
    std::vector<GroupItem> launched;  // its kernels, which no task releases if it is not submitted
    try {
      launchPendingKernels(*comms[c], perComm[c]);
      for (const GroupItem& item : perComm[c])
        if (item.kernel) launched.push_back(item);
      if (auto request = submitGroup(*comms[c], std::move(perComm[c]), streams[c]))
        requests.push_back(std::move(request));
    } catch (const Error& error) {
      abandonKernels(launched, error);
      // The communicators after it have launched nothing: their operations fail unrun.
      for (size_t later = c + 1; later < comms.size(); ++later)
        for (const GroupItem& item : perComm[later])
          item.comm->recorder().failed(item.sequence, error);
      throw;
    }
  }
  if (async) return requests.empty() ? nullptr : requests.front();
  for (const auto& request : requests) request->wait();
  for (const auto& request : requests) request->rethrow();
  return nullptr;
}

}  // namespace tutti::runtime
