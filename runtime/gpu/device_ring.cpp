#include "runtime/gpu/device_ring.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <thread>

#include "base/error.hpp"
#include "base/fd_mailbox.hpp"
#include "base/log.hpp"
#include "kernels/device/tree.hpp"
#include "runtime/gpu/driver.hpp"
#include "runtime/gpu/gpu.hpp"
#include "runtime/gpu/kernel_launch.hpp"
#include "runtime/gpu/ring_proxies.hpp"
#include "runtime/gpu/shared_device_memory.hpp"

namespace tutti::runtime::gpu {
namespace {

namespace device = kernels::device;

// Counters on 128-byte lines of their own, as NCCL lays them out: head and tail have one writer
// each, on different GPUs.
constexpr size_t kCounterLine = 128;

struct Geometry {
  uint32_t nslots;
  uint32_t slotBytes;
};
constexpr Geometry kSimpleFifo{8, 128 << 10};
constexpr Geometry kLLFifo{8, 16 << 10};
// Messages up to this many bytes go LL (one memory round trip per line instead of Simple's
// three), larger ones Simple (protocolFor, channelsFor).
constexpr size_t kLLMaxBytes = 64 << 10;
// A channel (one block) moved 2.7 GB/s Simple and 1.3 LL on an H200, and a launch's time fell in
// proportion to its channels up to 16 (ring_one_gpu_bench --channels 1..16), while more channels
// added no time a small message could see (8 channels: 14 us at 1 KiB as at 64 KiB; through the
// API, 16 channels at 512 KiB within 20 us of one at 8 B; docs/benchmarks.md): every message
// takes all the channels it can fill with this much.
constexpr size_t kBytesPerChannel = 16 << 10;
constexpr uint64_t kInboxLabel = 0x7f1f0;
// How long a closing ring waits for its proxies to deliver what its kernels published: the
// peers' kernels take those slots at once if they still run.
constexpr std::chrono::milliseconds kProxyCloseWait{10000};
constexpr uint64_t kTreeInboxLabel = 0x7f1f1;
// A tree node's inbox, per channel: from each of its (at most two) children going up, then from
// its parent going down.
constexpr int kTreeLinks = device::kMaxPeers + 1;
constexpr int kFromParentLink = device::kMaxPeers;

size_t fifoBytes(Geometry g) {
  return 2 * kCounterLine + size_t{g.nslots} * g.slotBytes;
}

size_t channelBytes() {
  return fifoBytes(kSimpleFifo) + fifoBytes(kLLFifo);
}

// The `index`th pair of FIFOs in an inbox at `base` (Simple's, then LL's), and of those the one of
// `protocol`. The ring's inbox holds a pair per channel; the tree's kTreeLinks per channel.
device::Fifo fifoAt(void* base, int index, Protocol protocol) {
  const bool ll = protocol == Protocol::kLL;
  const Geometry g = ll ? kLLFifo : kSimpleFifo;
  unsigned char* at = static_cast<unsigned char*>(base) +
                      channelBytes() * static_cast<size_t>(index) +
                      (ll ? fifoBytes(kSimpleFifo) : 0);
  return {reinterpret_cast<uint64_t*>(at), reinterpret_cast<uint64_t*>(at + kCounterLine),
          at + 2 * kCounterLine, g.nslots, g.slotBytes};
}

CUdeviceptr onDevice(void* pinned) {
  CUdeviceptr address = 0;
  check(driver().hostDevicePointer(&address, pinned, 0), "cuMemHostGetDevicePointer");
  return address;
}

std::atomic_ref<int32_t> statusWord(void* statuses, int channel) {
  return std::atomic_ref<int32_t>(static_cast<int32_t*>(statuses)[channel]);
}

// After the channels' statuses, the word the stream sets after everything the launch enqueued
// (avg's division included) has run: a stream memory write, not a host function, which cost
// 14-30 us more per launch on an H200 (tests/cuda/launch_overheads_bench).
constexpr int kEndedWord = device::kMaxChannels;
constexpr size_t kStatusBytes = sizeof(int32_t) * (device::kMaxChannels + 1);

// Device memory freed when the ring goes; a failure to free it is only worth a warning then.
struct FreeOnDevice {
  void operator()(void* memory) const noexcept {
    try {
      freeDevice(memory);
    } catch (const Error& error) {
      log::warn("gpu: the device ring's rank table was not freed: {}", error.what());
    }
  }
};

}  // namespace

// A rank's place in one tree: its parent (-1 at the root), its children in rank order, and which
// of its parent's children it is.
struct TreePlace {
  int parent = -1;
  std::vector<int> children;
  int childIndex = -1;
};

// One channel's ring as this rank takes part in it.
struct ChannelRing {
  int position = 0;  // this rank's
  int prev = 0, next = 0;
  // The channel's FIFO pair this rank receives on and the one it sends to (in the next rank's
  // inbox), as the GPU sees them: shared device memory within the host, this rank's pinned host
  // memory for a link that crosses hosts (its proxy moves the slots).
  void* fromPrev = nullptr;
  void* toNext = nullptr;
  const int* ranks = nullptr;  // [position]: the rank there, in device memory; null: rank order
};

struct DeviceRing::State {
  RingMembers members;
  PinnedPool& pool;
  std::vector<ChannelRing> channels;  // [channel], maxChannels of them
  // Every ring's order, one after the other, in device memory for the kernels (RingArgs::ranks);
  // null while every ring is in rank order.
  std::unique_ptr<void, FreeOnDevice> rankTable;
  CUcontext context = nullptr;
  std::optional<FdMailbox> mailbox;  // bound for the ring's life: the tree connects later
  // This rank's inboxes, one per rank before it on some channel's ring (a FIFO pair per such
  // channel), and those of the ranks after it, mapped.
  std::vector<SharedDeviceMemory> inboxes, nexts;
  bool crossesHosts = false;  // some link of the ring does: Simple only
  std::unique_ptr<PinnedPool::Lease> proxyInbox, proxyOutbox;
  std::vector<std::unique_ptr<FifoProxy>> proxies;  // after the FIFOs they move: stopped first
  // The trees over the ranks (RingMembers::treeParents), connected by their first all-reduce:
  // this rank's place in each, its inbox, and the inboxes of the ranks next to it in any.
  std::vector<TreePlace> trees;
  std::optional<SharedDeviceMemory> treeInbox;
  std::map<int, SharedDeviceMemory> neighbourInboxes;  // by rank
  std::unique_ptr<PinnedPool::Lease> control;         // [0] the abort flag, [1] the released ticket
  CUdeviceptr abortOnDevice = 0, ticketOnDevice = 0;  // the two words as the GPU sees them
  CUstream own = nullptr;
  CUevent last = nullptr;        // recorded after every kernel: the next one waits for it
  CUevent callerWork = nullptr;  // the caller's default-stream work before a held launch
  bool launchedBefore = false;
  uint32_t tickets = 0;
  std::mutex mutex;  // launches (the issuing thread) and release (the engine's)
  // The statuses of the kernels launched whose ended word the stream has not set yet: leased
  // until it has, whoever holds their KernelRun.
  std::vector<std::shared_ptr<PinnedPool::Lease>> unended;

  State(const RingMembers& m, PinnedPool& p) : members(m), pool(p) {}
  uint32_t* word(int index) const { return static_cast<uint32_t*>(control->data()) + index; }
};

namespace {

// Forgets the launched kernels whose ended word is set and returns how many are left (the caller
// holds s.mutex).
size_t forgetEnded(DeviceRing::State& s) {
  std::erase_if(s.unended, [](const std::shared_ptr<PinnedPool::Lease>& statuses) {
    return statusWord(statuses->data(), kEndedWord).load(std::memory_order_acquire) == 1;
  });
  return s.unended.size();
}

size_t bytesMoved(const RingCall& call, int nranks) {
  const size_t block = call.count * kernels::typeSize(call.dtype);
  const bool blocks = call.collective == RingCollective::kReduceScatter ||
                      call.collective == RingCollective::kAllGather;
  return blocks ? block * static_cast<size_t>(nranks) : block;
}

// Messages up to kLLMaxBytes go LL where no link crosses hosts, larger ones Simple; a channel per
// kBytesPerChannel, up to the members' maximum. Each call's own, alike on every rank.
Protocol protocolFor(const DeviceRing::State& s, const RingCall& call) {
  const size_t bytes = bytesMoved(call, static_cast<int>(s.members.pids.size()));
  return bytes <= kLLMaxBytes && !s.crossesHosts ? Protocol::kLL : Protocol::kSimple;
}

int channelsFor(const DeviceRing::State& s, const RingCall& call) {
  const size_t bytes = bytesMoved(call, static_cast<int>(s.members.pids.size()));
  return static_cast<int>(std::clamp<size_t>((bytes + kBytesPerChannel - 1) / kBytesPerChannel, 1,
                                             size_t(s.members.maxChannels)));
}

// One launch's kernel: the calls it runs, and what the launch chose for them.
struct Enqueued {
  std::span<const RingCall> calls;
  Protocol protocol;
  int nchannels;           // the most any call runs on
  device::Status* status;  // as the device sees it
};

// What a ring's and a tree's launch share; each call a work.
template <typename Args>
void fillCommon(const DeviceRing::State& s, const Enqueued& e, Args& a) {
  a.dtype = e.calls[0].dtype;
  a.op = e.calls[0].op;
  a.protocol = e.protocol;
  a.nworks = static_cast<int>(e.calls.size());
  for (size_t i = 0; i < e.calls.size(); ++i) {
    const RingCall& call = e.calls[i];
    a.works[i] = {static_cast<Collective>(call.collective),
                  call.send,
                  call.recv,
                  call.count,
                  call.root,
                  channelsFor(s, call)};
  }
  a.nchannels = e.nchannels;
  a.abortFlag = reinterpret_cast<uint32_t*>(s.abortOnDevice);
  a.spinBudget = device::kNoSpinBudget;  // the host watches the time (runtime/device_path.cpp)
  a.status = e.status;
}

void enqueueRing(const DeviceRing::State& s, const Enqueued& e, CUstream stream) {
  RingCollectiveArgs a{};
  a.nranks = static_cast<int>(s.members.pids.size());
  a.rank = s.members.rank;
  fillCommon(s, e, a);
  for (int ch = 0; ch < e.nchannels; ++ch) {
    const ChannelRing& c = s.channels[static_cast<size_t>(ch)];
    a.ring[ch] = {fifoAt(c.fromPrev, 0, e.protocol), fifoAt(c.toNext, 0, e.protocol), c.position,
                  c.ranks};
  }
  launchRing(a, stream);
}

// The tree's FIFO pair `link` of channel `channel` in a tree inbox.
device::Fifo treeFifo(const SharedDeviceMemory& inbox, int channel, int link, Protocol protocol) {
  return fifoAt(inbox.data(), channel * kTreeLinks + link, protocol);
}

void enqueueTree(const DeviceRing::State& s, const Enqueued& e, CUstream stream) {
  TreeAllReduceArgs a{};
  fillCommon(s, e, a);
  for (int ch = 0; ch < e.nchannels; ++ch) {
    const TreePlace& t = s.trees[static_cast<size_t>(ch) % s.trees.size()];
    device::TreeLinks& l = a.links[ch];
    l.hasParent = t.parent >= 0;
    l.nchildren = static_cast<int>(t.children.size());
    if (l.hasParent) {
      l.toParent = treeFifo(s.neighbourInboxes.at(t.parent), ch, t.childIndex, e.protocol);
      l.fromParent = treeFifo(*s.treeInbox, ch, kFromParentLink, e.protocol);
    }
    for (int i = 0; i < l.nchildren; ++i) {
      l.fromChildren[i] = treeFifo(*s.treeInbox, ch, i, e.protocol);
      l.toChildren[i] = treeFifo(s.neighbourInboxes.at(t.children[static_cast<size_t>(i)]), ch,
                                 kFromParentLink, e.protocol);
    }
  }
  launchTreeAllReduce(a, stream);
}

// Where avg's result lies on this rank, to be divided there: nullptr where it writes none.
void* averaged(const RingCall& call, int rank) {
  if (call.op != kernels::RedOp::kAvg) return nullptr;
  switch (call.collective) {
    case RingCollective::kAllReduce: return call.recv;
    case RingCollective::kReduceScatter:  // in place: the rank's block of the input
      return call.recv != call.send
                 ? call.recv
                 : static_cast<char*>(call.recv) +
                       call.count * kernels::typeSize(call.dtype) * static_cast<size_t>(rank);
    case RingCollective::kReduce: return rank == call.root ? call.recv : nullptr;
    default: return nullptr;
  }
}

// Whether two calls run the same kernel (with its protocol: kernel_launch's name for it) over the
// same links: one launch can hold both.
bool sameKernel(const DeviceRing::State& s, const RingCall& a, const RingCall& b) {
  const auto kernelOf = [&](const RingCall& call) {
    return kernelName(static_cast<Collective>(call.collective), call.dtype, call.op,
                      protocolFor(s, call));
  };
  return a.tree == b.tree && kernelOf(a) == kernelOf(b);
}

using Span = std::pair<uintptr_t, uintptr_t>;  // [first, second) of the address space

// The memory a call reads and what it writes, as the C API lays them out (a buffer the call does
// not use on this rank, as a non-root's, may be null: an empty span).
std::array<Span, 2> buffersOf(const RingCall& call, int nranks) {
  const size_t block = call.count * kernels::typeSize(call.dtype);
  const size_t many = block * static_cast<size_t>(nranks);
  const bool scatter = call.collective == RingCollective::kReduceScatter;
  const bool gather = call.collective == RingCollective::kAllGather;
  const auto span = [](const void* buffer, size_t bytes) {
    const auto at = reinterpret_cast<uintptr_t>(buffer);
    return buffer ? Span{at, at + bytes} : Span{0, 0};
  };
  return {span(call.send, scatter ? many : block), span(call.recv, gather ? many : block)};
}

bool overlap(Span a, Span b) {
  return a.first < b.second && b.first < a.second;
}

}  // namespace

bool DeviceRing::fusable(std::span<const RingCall> batch, const RingCall& next) const {
  if (batch.empty()) return true;
  const int n = static_cast<int>(state_->members.pids.size());
  if (batch.size() >= size_t(kMaxWorks) || !sameKernel(*state_, batch[0], next)) return false;
  for (const RingCall& call : batch)
    for (const Span& mine : buffersOf(next, n))
      for (const Span& theirs : buffersOf(call, n))
        if (overlap(mine, theirs)) return false;
  return true;
}

namespace {

size_t inboxBytes(int pairs) {
  return channelBytes() * static_cast<size_t>(pairs);
}

// An inbox of `pairs` FIFO pairs on the members' device (or in host memory for it), zeroed before
// anyone maps it: counters at 0, and no LL line carries a flag (flags start at 1). A new memfd
// reads as zeros already.
SharedDeviceMemory zeroedInbox(int pairs, const RingMembers& members, CUcontext context,
                               Placement placement) {
  SharedDeviceMemory inbox =
      SharedDeviceMemory::allocate(inboxBytes(pairs), members.device, placement);
  if (placement == Placement::kDevice) {
    const std::vector<unsigned char> zeros(inbox.bytes());
    copyToDevice(inbox.data(), zeros.data(), zeros.size(),
                 BufferKind{MemoryKind::kDevice, members.device, context});
  }
  return inbox;
}

// Where `owner`'s inbox lies: in its GPU's memory, unless one of the ranks that write into it
// (on its host) has a GPU that cannot reach that memory; then in pinned host memory both reach.
Placement inboxPlacement(const RingMembers& m, int owner, const std::vector<int>& writers) {
  for (const int writer : writers)
    if (!writesInPlace(m.gpus[static_cast<size_t>(writer)], m.gpus[static_cast<size_t>(owner)])) {
      if (owner == m.rank)
        log::info(
            "gpu: rank {}: rank {}'s GPU cannot reach this one's memory (no peer access): the "
            "FIFOs it writes lie in pinned host memory",
            m.rank, writer);
      return Placement::kHost;
    }
  return Placement::kDevice;
}

// `rank`'s place in the tree whose parents ([rank]) are `parents`; kInternal for a parent out of
// range or more children than the kernels take (kMaxPeers).
TreePlace treePlace(const std::vector<int>& parents, int rank) {
  const int n = static_cast<int>(parents.size());
  TreePlace place;
  place.parent = parents[static_cast<size_t>(rank)];
  if (place.parent < -1 || place.parent >= n)
    raise(ErrorCode::kInternal, "device tree: rank {}'s parent {}", rank, place.parent);
  for (int r = 0; r < n; ++r)
    if (parents[static_cast<size_t>(r)] == rank) place.children.push_back(r);
  // Its parent's children are in rank order too: those before it share its parent.
  if (place.parent >= 0)
    place.childIndex =
        static_cast<int>(std::count(parents.begin(), parents.begin() + rank, place.parent));
  if (place.children.size() > size_t(device::kMaxPeers))
    raise(ErrorCode::kInternal, "device tree: rank {} has {} children (at most {})", rank,
          place.children.size(), device::kMaxPeers);
  return place;
}

// The ranks next to `rank` in any of the trees: parents and children, each once, in rank order.
std::vector<int> treeNeighbours(const std::vector<std::vector<int>>& trees, int rank) {
  std::set<int> neighbours;
  for (const std::vector<int>& parents : trees) {
    const TreePlace place = treePlace(parents, rank);
    if (place.parent >= 0) neighbours.insert(place.parent);
    neighbours.insert(place.children.begin(), place.children.end());
  }
  return {neighbours.begin(), neighbours.end()};
}

// The label of a tree inbox's descriptor names its owner, the sender: a rank's neighbours differ
// from tree to tree, and ranks that are threads of one process share a pid.
uint64_t treeInboxLabel(int owner) {
  return kTreeInboxLabel + ((static_cast<uint64_t>(owner) + 1) << 32);
}

// The `pairs` FIFO pairs of a link that crosses hosts, in pinned host memory laid out as an inbox
// and zeroed, leased into `lease`; their Simple FIFOs as the host sees them (for the proxy) go into
// `hostView`. Returns where the GPU sees them.
void* pinnedLink(const DeviceRing::State& s, int pairs, std::unique_ptr<PinnedPool::Lease>& lease,
                 std::vector<device::Fifo>& hostView) {
  const size_t bytes = inboxBytes(pairs);
  lease = s.pool.take(bytes, s.context);
  std::memset(lease->data(), 0, bytes);
  for (int pair = 0; pair < pairs; ++pair)
    hostView.push_back(fifoAt(lease->data(), pair, Protocol::kSimple));
  ContextScope scope(s.context);
  return reinterpret_cast<void*>(onDevice(lease->data()));
}

// The members' pids where they share this rank's host; 0 (no process) for the others, whose
// descriptors could not come through the fd mailbox anyway.
std::vector<pid_t> localPids(const RingMembers& m) {
  std::vector<pid_t> pids = m.pids;
  for (size_t r = 0; r < pids.size(); ++r)
    if (m.hosts[r] != m.hosts[static_cast<size_t>(m.rank)]) pids[r] = 0;
  return pids;
}

// [rank]: where `order` places it; kInternal unless `order` holds each of 0..n-1 once.
std::vector<int> positionsIn(const std::vector<int>& order, int n) {
  std::vector<int> positions(static_cast<size_t>(n), -1);
  for (size_t p = 0; p < order.size(); ++p) {
    const int rank = order[p];
    if (rank < 0 || rank >= n || positions[static_cast<size_t>(rank)] >= 0) break;
    positions[static_cast<size_t>(rank)] = static_cast<int>(p);
  }
  if (order.size() != static_cast<size_t>(n) ||
      std::find(positions.begin(), positions.end(), -1) != positions.end())
    raise(ErrorCode::kInternal, "device ring: order '{}' is not a ring of {} ranks",
          fmt::join(order, " "), n);
  return positions;
}

bool inRankOrder(const std::vector<int>& order) {
  for (size_t p = 0; p < order.size(); ++p)
    if (order[p] != static_cast<int>(p)) return false;
  return true;
}

// `orders` one after the other in device memory on `device`, where the kernels read them; null
// when every order is rank order (the kernels' default).
std::unique_ptr<void, FreeOnDevice> rankTableOn(int device,
                                                const std::vector<std::vector<int>>& orders) {
  if (std::all_of(orders.begin(), orders.end(), inRankOrder)) return nullptr;
  std::vector<int> table;
  for (const std::vector<int>& order : orders)
    table.insert(table.end(), order.begin(), order.end());
  const size_t bytes = table.size() * sizeof(int);
  std::unique_ptr<void, FreeOnDevice> onDevice(allocateDevice(bytes, device));
  copyToDevice(onDevice.get(), table.data(), bytes,
               BufferKind{MemoryKind::kDevice, device, primaryContext(device)});
  return onDevice;
}

// The label of a ring inbox's descriptor names its owner, the sender: a rank may come before
// several ranks on the channels' rings, and ranks that are threads of one process share a pid.
uint64_t ringInboxLabel(int owner) {
  return kInboxLabel + ((static_cast<uint64_t>(owner) + 1) << 32);
}

// For each rank next to this one on some channel's ring (before it where `neighbour` is
// &ChannelRing::prev), connect(rank, pairs) makes the link and returns where the GPU sees its FIFO
// pairs, one per such channel in channel order; each of those channels' `fifos` then points at its
// pair.
template <typename Connect>
void connectLinks(std::vector<ChannelRing>& channels, int ChannelRing::*neighbour,
                  void* ChannelRing::*fifos, const Connect& connect) {
  std::map<int, std::vector<size_t>> byRank;
  for (size_t ch = 0; ch < channels.size(); ++ch) byRank[channels[ch].*neighbour].push_back(ch);
  for (const auto& [rank, mine] : byRank) {
    auto* base = static_cast<unsigned char*>(connect(rank, static_cast<int>(mine.size())));
    for (size_t i = 0; i < mine.size(); ++i)
      channels[mine[i]].*fifos = base + inboxBytes(static_cast<int>(i));
  }
}

std::string formatOrders(const std::vector<std::vector<int>>& orders) {
  std::vector<std::string> each;
  for (const std::vector<int>& order : orders)
    each.push_back(fmt::format("{}", fmt::join(order, " ")));
  return fmt::format("{} {}", orders.size() > 1 ? "rings" : "ring", fmt::join(each, " | "));
}

}  // namespace

KernelRun::KernelRun(std::shared_ptr<PinnedPool::Lease> statuses, int nchannels)
    : statuses_(std::move(statuses)), nchannels_(nchannels) {}

KernelRun::State KernelRun::state() const {
  bool started = false, done = statusWord(statuses_->data(), kEndedWord).load() == 1;
  for (int ch = 0; ch < nchannels_; ++ch) {
    const auto status = static_cast<device::Status>(
        statusWord(statuses_->data(), ch).load(std::memory_order_acquire));
    started = started || status != device::kPending;
    done = done && status != device::kPending && status != device::kRunning;
  }
  return done ? State::kDone : started ? State::kRunning : State::kQueued;
}

bool KernelRun::succeeded() const {
  for (int ch = 0; ch < nchannels_; ++ch)
    if (statusWord(statuses_->data(), ch).load(std::memory_order_acquire) !=
        static_cast<int32_t>(device::Status::kOk))
      return false;
  return true;
}

DeviceRing::DeviceRing(const RingMembers& members, PinnedPool& pool, const Deadline& deadline)
    : state_(std::make_shared<State>(members, pool)) {
  State& s = *state_;
  const int n = static_cast<int>(members.pids.size());
  if (n < 2 || members.rank < 0 || members.rank >= n || members.maxChannels < 1 ||
      members.maxChannels > device::kMaxChannels || members.hosts.size() != size_t(n) ||
      members.gpus.size() != size_t(n) || members.orders.empty())
    raise(ErrorCode::kInternal,
          "device ring: rank {} of {}, {} channels, {} hosts, {} GPUs, {} rings", members.rank, n,
          members.maxChannels, members.hosts.size(), members.gpus.size(), members.orders.size());
  s.context = primaryContext(members.device);
  s.rankTable = rankTableOn(members.device, members.orders);
  const auto hostOf = [&](int rank) { return members.hosts[static_cast<size_t>(rank)]; };
  // This rank in each ring, once; channel c runs ring c % the count.
  std::vector<ChannelRing> rings;
  for (size_t ring = 0; ring < members.orders.size(); ++ring) {
    const std::vector<int>& order = members.orders[ring];
    ChannelRing& r = rings.emplace_back();
    r.position = positionsIn(order, n)[static_cast<size_t>(members.rank)];
    r.prev = order[static_cast<size_t>((r.position + n - 1) % n)];
    r.next = order[static_cast<size_t>((r.position + 1) % n)];
    if (s.rankTable) r.ranks = static_cast<const int*>(s.rankTable.get()) + ring * size_t(n);
    for (int p = 0; p < n; ++p)
      s.crossesHosts =
          s.crossesHosts || hostOf(order[size_t(p)]) != hostOf(order[size_t((p + 1) % n)]);
  }
  for (int ch = 0; ch < members.maxChannels; ++ch)
    s.channels.push_back(rings[static_cast<size_t>(ch) % rings.size()]);
  // The link proxies carry one ring's links.
  if (s.crossesHosts && members.orders.size() > 1)
    raise(ErrorCode::kInternal, "device ring across hosts with {} rings: one only",
          members.orders.size());
  s.control = pool.take(2 * sizeof(uint32_t), s.context);
  std::atomic_ref<uint32_t>(*s.word(0)).store(0);
  std::atomic_ref<uint32_t>(*s.word(1)).store(0);
  {
    ContextScope scope(s.context);
    s.abortOnDevice = onDevice(s.word(0));
    s.ticketOnDevice = onDevice(s.word(1));
  }

  s.mailbox.emplace(members.job, members.rank, localPids(members));
  CrossingLinks crossing;
  // Each rank sends its inboxes to the ranks before it before it waits for those after it: no
  // cycle of waits.
  connectLinks(s.channels, &ChannelRing::prev, &ChannelRing::fromPrev, [&](int prev, int pairs) {
    if (hostOf(prev) != hostOf(members.rank)) {
      crossing.prev = prev;
      return pinnedLink(s, pairs, s.proxyInbox, crossing.fromPrev);
    }
    SharedDeviceMemory& inbox = s.inboxes.emplace_back(
        zeroedInbox(pairs, members, s.context, inboxPlacement(members, members.rank, {prev})));
    const Fd exported = inbox.exportFd();
    s.mailbox->send(prev, ringInboxLabel(members.rank), exported.get(), deadline);
    return inbox.data();
  });
  connectLinks(s.channels, &ChannelRing::next, &ChannelRing::toNext, [&](int next, int pairs) {
    if (hostOf(next) != hostOf(members.rank)) {
      crossing.next = next;
      return pinnedLink(s, pairs, s.proxyOutbox, crossing.toNext);
    }
    const Fd theirs =
        s.mailbox->receive(members.pids[static_cast<size_t>(next)], ringInboxLabel(next), deadline);
    return s.nexts
        .emplace_back(SharedDeviceMemory::import(theirs, inboxBytes(pairs), members.device,
                                                 inboxPlacement(members, next, {members.rank})))
        .data();
  });
  if (s.crossesHosts)
    s.proxies =
        connectProxies(members.job, members.rank, n, crossing, members.proxySockets, deadline);

  ContextScope scope(s.context);
  check(driver().createStream(&s.own, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  check(driver().createEvent(&s.last, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  check(driver().createEvent(&s.callerWork, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  log::info(
      "gpu: rank {} joined the device ring of {} ranks on device {} ({} channels, FIFOs of "
      "{} MiB{}{})",
      members.rank, n, members.device, members.maxChannels,
      (channelBytes() * size_t(members.maxChannels)) >> 20,
      s.crossesHosts ? "; across hosts: Simple only" : "",
      s.rankTable ? "; " + formatOrders(members.orders) : "");
}

DeviceRing::~DeviceRing() {
  State& s = *state_;
  abort();
  const auto unendedKernels = [&s] {
    std::lock_guard lock(s.mutex);
    return forgetEnded(s);
  };
  const auto deadline = std::chrono::steady_clock::now() + drainWait_;
  while (unendedKernels() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (const size_t unended = unendedKernels(); unended > 0) {
    log::warn(
        "gpu: rank {}: {} device kernel(s) had not ended {} ms after the abort flag was "
        "set; their FIFOs stay mapped rather than be unmapped under the GPU",
        s.members.rank, unended, drainWait_.count());
    s.proxies.clear();  // they only move slots: stopping them is safe, and their peers learn it
    new std::shared_ptr<State>(state_);  // deliberately kept: the GPU may still write there
    return;
  }
  // The last slots the kernels published may still be on their way to a peer whose kernel
  // needs them: sent, then goodbye, before the proxies stop.
  const auto closeBy = std::min(deadline, std::chrono::steady_clock::now() + kProxyCloseWait);
  for (const auto& proxy : s.proxies)
    proxy->close(std::chrono::duration_cast<std::chrono::milliseconds>(std::max(
        closeBy - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration{})));
  ContextScope scope(s.context);
  if (s.last) driver().destroyEvent(s.last);
  if (s.callerWork) driver().destroyEvent(s.callerWork);
  if (s.own) driver().destroyStream(s.own);
}

void DeviceRing::connectTree(const Deadline& deadline) {
  State& s = *state_;
  if (s.treeInbox) return;
  if (s.crossesHosts) raise(ErrorCode::kInternal, "device tree over ranks on several hosts");
  const RingMembers& m = s.members;
  const size_t n = m.pids.size();
  if (m.treeParents.empty() ||
      std::any_of(m.treeParents.begin(), m.treeParents.end(),
                  [&](const std::vector<int>& parents) { return parents.size() != n; }))
    raise(ErrorCode::kInternal, "device tree: {} trees for {} ranks", m.treeParents.size(), n);
  std::vector<TreePlace> trees;
  for (const std::vector<int>& parents : m.treeParents) trees.push_back(treePlace(parents, m.rank));
  const auto neighboursOf = [&](int rank) { return treeNeighbours(m.treeParents, rank); };
  const std::vector<int> neighbours = neighboursOf(m.rank);
  SharedDeviceMemory inbox =
      zeroedInbox(kTreeLinks * m.maxChannels, m, s.context, inboxPlacement(m, m.rank, neighbours));
  // Every neighbour takes the whole inbox: which pair of it a channel's link uses follows from the
  // channel's tree (treeFifo).
  const Fd exported = inbox.exportFd();
  for (const int neighbour : neighbours)
    s.mailbox->send(neighbour, treeInboxLabel(m.rank), exported.get(), deadline);
  // Kept only once every link is there: a connection that fails leaves no half of a tree.
  std::map<int, SharedDeviceMemory> neighbourInboxes;
  for (const int neighbour : neighbours) {
    const Fd theirs = s.mailbox->receive(m.pids[static_cast<size_t>(neighbour)],
                                         treeInboxLabel(neighbour), deadline);
    neighbourInboxes.emplace(
        neighbour,
        SharedDeviceMemory::import(theirs, inboxBytes(kTreeLinks * m.maxChannels), m.device,
                                   inboxPlacement(m, neighbour, neighboursOf(neighbour))));
  }
  s.trees = std::move(trees);
  s.neighbourInboxes = std::move(neighbourInboxes);
  s.treeInbox = std::move(inbox);
  std::vector<std::string> places;
  for (const TreePlace& t : s.trees)
    places.push_back(fmt::format("parent {}, children [{}]", t.parent, fmt::join(t.children, " ")));
  log::info("gpu: rank {} joined the device trees of {} ranks ({})", m.rank, n,
            fmt::join(places, "; "));
}

bool DeviceRing::treeConnected() const {
  return state_->treeInbox.has_value();
}

std::shared_ptr<const KernelRun> DeviceRing::launch(std::span<const RingCall> calls, void* stream) {
  State& s = *state_;
  const int n = static_cast<int>(s.members.pids.size());
  if (calls.empty() || calls.size() > size_t(kMaxWorks))
    raise(ErrorCode::kInternal, "device ring: {} collectives in one launch", calls.size());
  const Protocol protocol = protocolFor(s, calls[0]);
  int nchannels = 1;
  size_t moved = 0;
  for (const RingCall& call : calls) {
    if (!sameKernel(s, calls[0], call))
      raise(ErrorCode::kInternal, "device ring: collectives of different kernels in one launch");
    nchannels = std::max(nchannels, channelsFor(s, call));
    moved += call.count;
  }
  std::lock_guard lock(s.mutex);
  ContextScope scope(s.context);
  auto statuses = std::shared_ptr<PinnedPool::Lease>(s.pool.take(kStatusBytes, s.context));
  const bool empty = moved == 0;
  for (int ch = 0; ch < nchannels; ++ch)
    statusWord(statuses->data(), ch)
        .store(static_cast<int32_t>(empty ? device::Status::kOk : device::kPending));
  statusWord(statuses->data(), kEndedWord).store(empty ? 1 : 0);
  auto run = std::make_shared<const KernelRun>(statuses, nchannels);
  if (empty) return run;

  const Enqueued what{calls, protocol, nchannels,
                      reinterpret_cast<device::Status*>(onDevice(statuses->data()))};
  const auto target = static_cast<CUstream>(stream);
  if (s.launchedBefore) check(driver().waitEvent(target, s.last, 0), "cuStreamWaitEvent");
  // Refused before anything is enqueued (arguments, no such kernel); past it, the kernel runs
  // and the statuses must outlive it whatever fails next.
  if (calls[0].tree) {
    if (!s.treeInbox)
      raise(ErrorCode::kInternal, "device tree all-reduce before the tree was connected");
    enqueueTree(s, what, target);
  } else {
    enqueueRing(s, what, target);
  }
  s.launchedBefore = true;
  forgetEnded(s);
  s.unended.push_back(statuses);  // had the ended write below failed, leased for good
  std::optional<Error> failure;
  try {
    for (const RingCall& call : calls)
      if (void* result = averaged(call, s.members.rank))
        launchDivide(result, call.count, call.dtype, n, target);
  } catch (const Error& error) {
    failure = error;
  }
  const CUresult recorded = driver().recordEvent(s.last, target);
  // With the default flags the write comes after the work before it, its memory writes included.
  const CUresult ended = driver().writeValue32(
      target, reinterpret_cast<CUdeviceptr>(what.status) + sizeof(int32_t) * kEndedWord, 1, 0);
  check(ended, "cuStreamWriteValue32");
  check(recorded, "cuEventRecord");
  if (failure) throw *failure;
  return run;
}

std::pair<std::shared_ptr<const KernelRun>, uint32_t> DeviceRing::launchHeld(
    std::span<const RingCall> calls) {
  State& s = *state_;
  uint32_t ticket = 0;
  {
    std::lock_guard lock(s.mutex);
    ticket = ++s.tickets;
    ContextScope scope(s.context);
    // The forms without a stream see what the caller enqueued before the call on its thread's
    // default stream, and so on the legacy one, which that stream waits for: a copy from pageable
    // memory returns before its DMA has landed (seen on an H200: 8 ranks under MPS reduced stale
    // in-place inputs). Not recorded on the legacy stream itself: that waits for every blocking
    // stream, among them a thread rank's stream-form kernel that waits for this one's peers. One
    // way only: the ring's stream stays non-blocking, so the caller's later work never waits for
    // a kernel that waits for other ranks.
    check(driver().recordEvent(s.callerWork, CU_STREAM_PER_THREAD), "cuEventRecord");
    check(driver().waitEvent(s.own, s.callerWork, 0), "cuStreamWaitEvent");
    check(driver().waitValue32(s.own, s.ticketOnDevice, ticket, CU_STREAM_WAIT_VALUE_GEQ),
          "cuStreamWaitValue32");
  }
  return {launch(calls, s.own), ticket};
}

void DeviceRing::release(uint32_t ticket) {
  // Never lowered: releases from the engine and an abandon on the caller's thread may race.
  std::atomic_ref<uint32_t> released(*state_->word(1));
  uint32_t now = released.load(std::memory_order_relaxed);
  while (now < ticket && !released.compare_exchange_weak(now, ticket, std::memory_order_release)) {
  }
}

std::optional<Error> DeviceRing::linkFailure() const {
  for (const auto& proxy : state_->proxies)
    if (auto failure = proxy->failure()) return failure;
  return std::nullopt;
}

void DeviceRing::abort() {
  State& s = *state_;
  std::atomic_ref<uint32_t>(*s.word(0)).store(1, std::memory_order_release);
  // Kernels held for the engine are let go too, to meet the flag at once.
  std::lock_guard lock(s.mutex);
  release(s.tickets);
}

}  // namespace tutti::runtime::gpu
