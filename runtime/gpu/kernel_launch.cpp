#include "runtime/gpu/kernel_launch.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "kernels/fatbin.hpp"
#include "runtime/gpu/driver.hpp"
#include "runtime/gpu/gpu.hpp"

namespace tutti::runtime::gpu {
namespace {

namespace device = kernels::device;
using device::kMaxChannels;

const char* protocolName(Protocol p) {
  return p == Protocol::kLL ? "ll" : "simple";
}

bool validProtocol(Protocol p) {
  return p == Protocol::kSimple || p == Protocol::kLL;
}

std::string fifoProblem(const device::Fifo& f, const char* which, int channel) {
  if (!f.head || !f.tail || !f.slots)
    return fmt::format("channel {}'s FIFO {} lacks its head, tail or slots", channel, which);
  if (f.nslots == 0 || f.slotBytes < 32 || f.slotBytes % 16 != 0)
    return fmt::format(
        "channel {}'s FIFO {} has {} slots of {} bytes (at least one slot of a "
        "multiple of 16 bytes, at least 32)",
        channel, which, f.nslots, f.slotBytes);
  if (reinterpret_cast<uintptr_t>(f.slots) % 16 != 0)
    return fmt::format("channel {}'s FIFO {} has slots not 16-byte aligned", channel, which);
  return "";
}

// What picks the kernel: a known dtype (and op where it reduces) and protocol.
std::string kernelProblem(Collective c, kernels::DataType dtype, kernels::RedOp op,
                          Protocol protocol) {
  if (!kernels::isValid(dtype)) return fmt::format("dtype {} is out of range", int(dtype));
  if (device::reducing(c) && !kernels::isValid(op))
    return fmt::format("op {} is out of range", int(op));
  if (!validProtocol(protocol)) return fmt::format("protocol {} is out of range", int(protocol));
  return "";
}

// What every launch needs besides: 1 to kMaxChannels channels, somewhere to signal abort and
// report status.
std::string commonProblem(Collective c, kernels::DataType dtype, kernels::RedOp op,
                          Protocol protocol, int nchannels, const uint32_t* abortFlag,
                          const device::Status* status) {
  std::string problem = kernelProblem(c, dtype, op, protocol);
  if (!problem.empty()) return problem;
  if (nchannels < 1 || nchannels > kMaxChannels)
    return fmt::format("{} channels (1 to {})", nchannels, kMaxChannels);
  if (!abortFlag) return "the abort flag is NULL";
  if (!status) return "the status array is NULL";
  return "";
}

// Which kernel a launch runs: what picks it, so that a launch looks it up without formatting
// its name (the name is built once per context, on the first launch).
struct KernelId {
  enum Kind { kReducing, kCopying, kDividing } kind;
  kernels::DataType dtype;  // reducing, dividing
  kernels::RedOp op;        // reducing (avg: sum)
  Protocol protocol;        // reducing, copying
  auto operator<=>(const KernelId&) const = default;
};

KernelId collectiveKernel(Collective c, kernels::DataType dtype, kernels::RedOp op,
                          Protocol protocol) {
  if (!device::reducing(c)) return {KernelId::kCopying, {}, {}, protocol};
  return {KernelId::kReducing, dtype, op == kernels::RedOp::kAvg ? kernels::RedOp::kSum : op,
          protocol};
}

KernelId divideKernel(kernels::DataType dtype) {
  return {KernelId::kDividing, dtype, {}, {}};
}

std::string nameOf(const KernelId& k) {
  switch (k.kind) {
    case KernelId::kReducing:
      return fmt::format("tutti_reduce_{}_{}_{}", protocolName(k.protocol),
                         kernels::typeName(k.dtype), kernels::opName(k.op));
    case KernelId::kCopying: return fmt::format("tutti_copy_{}", protocolName(k.protocol));
    case KernelId::kDividing: return fmt::format("tutti_divide_{}", kernels::typeName(k.dtype));
  }
  return "";
}

// The kernels' module of each context, loaded on first use, and the functions found in it.
class Modules {
 public:
  CUfunction function(CUcontext context, const KernelId& kernel) {
    std::lock_guard lock(mutex_);
    CUmodule& module = modules_[context];
    if (!module) {
      const std::string why = whyNoKernels();
      if (!why.empty()) raise(ErrorCode::kSystem, "no device kernels: {}", why);
      check(driver().loadModule(&module, kernels::collectiveFatbin().data),
            "cuModuleLoadData(the device collectives' fatbin)");
    }
    CUfunction& f = functions_[{context, kernel}];
    if (!f) {
      const std::string name = nameOf(kernel);
      const CUresult found = driver().moduleFunction(&f, module, name.c_str());
      if (found != CUDA_SUCCESS)
        raise(ErrorCode::kSystem,
              "cuModuleGetFunction({}) failed: {} (the fatbin lacks it: built for another GPU "
              "architecture? see the gpu_arch option)",
              name, describe(found));
    }
    return f;
  }

 private:
  std::mutex mutex_;
  std::map<CUcontext, CUmodule> modules_;
  std::map<std::pair<CUcontext, KernelId>, CUfunction> functions_;
};

Modules& modules() {
  static Modules* once = new Modules;  // never destroyed: streams may launch until exit
  return *once;
}

// Launches `kernel` with `l` on stream, one block per channel.
void launchKernel(const KernelId& kernel, device::Launch l, CUstream stream) {
  CUcontext context = nullptr;
  check(driver().streamContext(stream, &context), "cuStreamGetCtx");
  ContextScope scope(context);
  const CUfunction f = modules().function(context, kernel);
  void* params[] = {&l};
  check(driver().launchKernel(f, static_cast<unsigned>(l.nchannels), 1, 1, device::kBlockThreads, 1,
                              1, 0, stream, params, nullptr),
        "cuLaunchKernel");
}

// Launches the kernel of the works (all of one kernel) for (dtype, op, protocol) on stream.
void launch(device::Launch l, kernels::DataType dtype, kernels::RedOp op, Protocol protocol,
            CUstream stream) {
  const Collective first = l.works[0].collective;
  if (!device::reducing(first))
    for (int w = 0; w < l.nworks; ++w) l.works[w].count *= kernels::typeSize(dtype);
  launchKernel(collectiveKernel(first, dtype, op, protocol), l, stream);
}

// What a ring's and a tree's launch share, from their arguments: the works that move anything.
template <typename Args>
device::Launch launchOf(device::Algorithm algorithm, const Args& a) {
  device::Launch l{};
  l.algorithm = algorithm;
  for (int w = 0; w < a.nworks; ++w)
    if (a.works[w].count > 0) l.works[l.nworks++] = a.works[w];
  l.nchannels = a.nchannels;
  l.abortFlag = a.abortFlag;
  l.spinBudget = a.spinBudget;
  l.status = a.status;
  return l;
}

}  // namespace

std::string kernelName(Collective collective, kernels::DataType dtype, kernels::RedOp op,
                       Protocol protocol) {
  return nameOf(collectiveKernel(collective, dtype, op, protocol));
}

std::string divideKernelName(kernels::DataType dtype) {
  return nameOf(divideKernel(dtype));
}

std::string whyNoKernels() {
  if (kernels::collectiveFatbin().bytes == 0)
    return "libtutti was built without nvcc, so without the device kernels";
  return "";
}

namespace {

bool validCollective(Collective c) {
  return c >= Collective::kAllReduce && c <= Collective::kReduce;
}

// A ring work's problem: a root out of the ring, a count whose blocks overflow, a buffer missing.
std::string ringWorkProblem(const Work& w, const RingCollectiveArgs& a) {
  const Collective c = w.collective;
  if ((c == Collective::kBroadcast || c == Collective::kReduce) &&
      (w.root < 0 || w.root >= a.nranks))
    return fmt::format("root {} in a ring of {} ranks", w.root, a.nranks);
  // Reduce-scatter's src and allgather's dst hold nranks blocks: their size must be a size_t.
  const size_t blocks = c == Collective::kReduceScatter || c == Collective::kAllGather
                            ? static_cast<size_t>(a.nranks)
                            : 1;
  if (w.count > SIZE_MAX / blocks / kernels::typeSize(a.dtype))
    return fmt::format("count {} x {} blocks of {} overflows", w.count, blocks,
                       kernels::typeName(a.dtype));
  // Broadcast reads only the root's src, reduce writes only the root's dst.
  const bool reads = c != Collective::kBroadcast || a.rank == w.root;
  const bool writes = c != Collective::kReduce || a.rank == w.root;
  if (w.count > 0 && reads && !w.src) return "src is NULL";
  if (w.count > 0 && writes && !w.dst) return "dst is NULL";
  return "";
}

// The works' problem: none or too many, a collective out of range, works of different kernels
// (or not all-reduces where `allReduces`), or workProblem(work) of one ("work i: ..." where there
// are several).
template <typename WorkProblem>
std::string worksProblem(const Work* works, int nworks, int nchannels, kernels::DataType dtype,
                         kernels::RedOp op, Protocol protocol, bool allReduces,
                         const WorkProblem& workProblem) {
  if (nworks < 1 || nworks > kMaxWorks)
    return fmt::format("{} collectives in one launch (1 to {})", nworks, kMaxWorks);
  for (int i = 0; i < nworks; ++i) {
    const Work& w = works[i];
    std::string problem;
    if (!validCollective(w.collective)) {
      problem = fmt::format("collective {} is out of range", int(w.collective));
    } else if (w.nchannels < 1 || w.nchannels > nchannels) {
      problem = fmt::format("{} channels (1 to the launch's {})", w.nchannels, nchannels);
    } else if (allReduces && w.collective != Collective::kAllReduce) {
      problem = "not an all-reduce";
    } else if (collectiveKernel(w.collective, dtype, op, protocol) !=
               collectiveKernel(works[0].collective, dtype, op, protocol)) {
      problem =
          fmt::format("runs {}, not {} as the first", kernelName(w.collective, dtype, op, protocol),
                      kernelName(works[0].collective, dtype, op, protocol));
    } else {
      problem = workProblem(w);
    }
    if (!problem.empty()) return nworks > 1 ? fmt::format("work {}: {}", i, problem) : problem;
  }
  return "";
}

}  // namespace

std::string ringProblem(const RingCollectiveArgs& a) {
  // The op matters only to the reducing kernel: the first work says which runs.
  const bool known =
      a.nworks >= 1 && a.nworks <= kMaxWorks && validCollective(a.works[0].collective);
  std::string problem =
      commonProblem(known ? a.works[0].collective : Collective::kAllReduce, a.dtype, a.op,
                    a.protocol, a.nchannels, a.abortFlag, a.status);
  if (!problem.empty()) return problem;
  if (a.nranks < 1 || a.rank < 0 || a.rank >= a.nranks)
    return fmt::format("rank {} in a ring of {} ranks", a.rank, a.nranks);
  problem = worksProblem(a.works, a.nworks, a.nchannels, a.dtype, a.op, a.protocol, false,
                         [&](const Work& w) { return ringWorkProblem(w, a); });
  if (!problem.empty()) return problem;
  for (int ch = 0; ch < a.nchannels; ++ch) {
    const device::RingLinks& ring = a.ring[ch];
    if (ring.position < 0 || ring.position >= a.nranks)
      return fmt::format("channel {}: position {} in a ring of {} ranks", ch, ring.position,
                         a.nranks);
    if (a.nranks == 1) continue;
    problem = fifoProblem(ring.fromPrev, "from prev", ch);
    if (problem.empty()) problem = fifoProblem(ring.toNext, "to next", ch);
    if (!problem.empty()) return problem;
  }
  return "";
}

std::string treeProblem(const TreeAllReduceArgs& a) {
  std::string problem = commonProblem(Collective::kAllReduce, a.dtype, a.op, a.protocol,
                                      a.nchannels, a.abortFlag, a.status);
  if (!problem.empty()) return problem;
  problem = worksProblem(
      a.works, a.nworks, a.nchannels, a.dtype, a.op, a.protocol, true, [&](const Work& w) {
        if (w.count > SIZE_MAX / kernels::typeSize(a.dtype))
          return fmt::format("count {} of {} overflows", w.count, kernels::typeName(a.dtype));
        if (w.count > 0 && (!w.src || !w.dst))
          return std::string(w.src ? "dst is NULL" : "src is NULL");
        return std::string();
      });
  if (!problem.empty()) return problem;
  for (int ch = 0; ch < a.nchannels; ++ch) {
    const device::TreeLinks& l = a.links[ch];
    if (l.nchildren < 0 || l.nchildren > device::kMaxPeers)
      return fmt::format("channel {} has {} children (0 to {})", ch, l.nchildren,
                         device::kMaxPeers);
    // Parent and children cut the same chunks only if every FIFO has the same slot size.
    std::vector<std::pair<const device::Fifo*, const char*>> fifos;
    if (l.hasParent)
      fifos.insert(fifos.end(), {{&l.toParent, "to parent"}, {&l.fromParent, "from parent"}});
    for (int i = 0; i < l.nchildren; ++i)
      fifos.insert(fifos.end(),
                   {{&l.fromChildren[i], "from a child"}, {&l.toChildren[i], "to a child"}});
    for (const auto& [fifo, which] : fifos) {
      problem = fifoProblem(*fifo, which, ch);
      if (!problem.empty()) return problem;
      if (fifo->slotBytes != fifos.front().first->slotBytes)
        return fmt::format("channel {}'s FIFOs have slots of {} and {} bytes (a tree's must match)",
                           ch, fifos.front().first->slotBytes, fifo->slotBytes);
    }
  }
  return "";
}

void launchRing(const RingCollectiveArgs& a, CUstream stream) {
  const std::string problem = ringProblem(a);
  if (!problem.empty()) raise(ErrorCode::kInvalidArgument, "device ring collective: {}", problem);
  device::Launch l = launchOf(device::Algorithm::kRing, a);
  if (l.nworks == 0) return;
  l.nranks = a.nranks;
  for (int ch = 0; ch < a.nchannels; ++ch) l.ring[ch] = a.ring[ch];
  launch(l, a.dtype, a.op, a.protocol, stream);
}

void launchTreeAllReduce(const TreeAllReduceArgs& a, CUstream stream) {
  const std::string problem = treeProblem(a);
  if (!problem.empty()) raise(ErrorCode::kInvalidArgument, "device tree all-reduce: {}", problem);
  device::Launch l = launchOf(device::Algorithm::kTree, a);
  if (l.nworks == 0) return;
  l.nranks = 1;
  for (int ch = 0; ch < a.nchannels; ++ch) l.tree[ch] = a.links[ch];
  launch(l, a.dtype, a.op, a.protocol, stream);
}

void launchDivide(void* data, size_t count, kernels::DataType dtype, int divisor, CUstream stream) {
  if (!kernels::isValid(dtype))
    raise(ErrorCode::kInvalidArgument, "device divide: dtype {} is out of range", int(dtype));
  if (divisor < 1) raise(ErrorCode::kInvalidArgument, "device divide: divisor {}", divisor);
  if (count > 0 && !data) raise(ErrorCode::kInvalidArgument, "device divide: data is NULL");
  if (count == 0) return;
  constexpr size_t kElementsPerBlock = size_t{64} << 10;
  device::Launch l{};
  l.nworks = 1;
  l.works[0] = {Collective::kAllReduce, nullptr, data, count, 0, 0};
  l.nranks = divisor;
  l.nchannels = static_cast<int>(
      std::min<size_t>((count + kElementsPerBlock - 1) / kElementsPerBlock, device::kMaxChannels));
  launchKernel(divideKernel(dtype), l, stream);
}

namespace {

int blocksPerSm(const KernelId& kernel, const char* caller) {
  CUcontext context = nullptr;
  check(driver().currentContext(&context), "cuCtxGetCurrent");
  if (!context) raise(ErrorCode::kInvalidUsage, "{}: no current context", caller);
  int blocks = 0;
  check(driver().occupancy(&blocks, modules().function(context, kernel), device::kBlockThreads, 0),
        "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  return blocks;
}

}  // namespace

int collectiveBlocksPerSm(Collective c, kernels::DataType dtype, kernels::RedOp op,
                          Protocol protocol) {
  const std::string problem = kernelProblem(c, dtype, op, protocol);
  if (!problem.empty()) raise(ErrorCode::kInvalidArgument, "collectiveBlocksPerSm: {}", problem);
  return blocksPerSm(collectiveKernel(c, dtype, op, protocol), "collectiveBlocksPerSm");
}

int fewestCollectiveBlocksPerSm() {
  int fewest = std::numeric_limits<int>::max();
  for (const Protocol protocol : {Protocol::kSimple, Protocol::kLL}) {
    fewest = std::min(
        fewest, blocksPerSm({KernelId::kCopying, {}, {}, protocol}, "fewestCollectiveBlocksPerSm"));
    for (int t = 0; t < kernels::kNumDataTypes; ++t)
      for (int o = 0; o < kernels::kNumRedOps; ++o)
        if (static_cast<kernels::RedOp>(o) != kernels::RedOp::kAvg)  // avg runs sum's kernel
          fewest =
              std::min(fewest, blocksPerSm({KernelId::kReducing, static_cast<kernels::DataType>(t),
                                            static_cast<kernels::RedOp>(o), protocol},
                                           "fewestCollectiveBlocksPerSm"));
  }
  return fewest;
}

}  // namespace tutti::runtime::gpu
