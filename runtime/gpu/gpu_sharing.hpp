// Ranks sharing a GPU (issue 18, item 5; NCCL refuses them). A rank's device kernel spins on FIFOs
// that its ring neighbours' kernels fill, so the kernels of one collective must all run at once.
// Kernels of different processes run on one GPU at the same time only under MPS: without it the
// GPU takes their contexts in turns, and every wait would last until the next switch. Under MPS
// every block of them, ranks x channels, must also be resident together, or a block waits for one
// the GPU cannot schedule. So at the first collective on device buffers the ranks exchange what
// their GPU is and holds (GpuFacts), and each derives the same plan from the same facts: how many
// channels a launch may use, or why the device buffers are staged instead.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <string>
#include <vector>

namespace tutti::runtime::gpu {

struct GpuFacts {
  std::array<uint8_t, 16> uuid{};  // the GPU (cuDeviceGetUuid), the same in every process
  int residentBlocks = 0;  // blocks of the collective kernels it holds at once: multiprocessors
                           // times the fewest any of the kernels fits on one
  bool mps = false;        // contexts on it are MPS clients (CU_DEVICE_ATTRIBUTE_MPS_ENABLED)
  // The GPUs this process sees whose memory this one cannot reach (cuDeviceCanAccessPeer).
  std::vector<std::array<uint8_t, 16>> unreachable = {};
  std::string busId = {};  // its PCI bus id, lower case ("0000:3b:00.0"), as topologies name it
  // Why this rank cannot tell (the driver refused a query): every rank then stages. "" if none.
  std::string unusable;
};

// This rank's GPU, `device` (needs the driver and the kernels: they exist when the plan matters).
GpuFacts gpuFacts(int device);

// The record passed to the other ranks, and back: kRemote naming `from` (as seen by `rank`) for a
// record that is short, long or out of range.
std::string encodeGpuFacts(const GpuFacts& facts);
GpuFacts decodeGpuFacts(const std::string& bytes, int rank, int from);

// Whether `writer`'s GPU writes to `owner`'s memory in place (both ranks on one machine): the same
// GPU, or one it has peer access to. A GPU the writer's process does not see (CUDA_VISIBLE_DEVICES)
// is taken as reachable, as NCCL takes it: the driver maps IPC memory of GPUs a process does not
// see since CUDA 10.1.
bool writesInPlace(const GpuFacts& writer, const GpuFacts& owner);

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi -L names it.
std::string uuidText(const std::array<uint8_t, 16>& uuid);

struct KernelPlan {
  int channels = 0;      // the most channels a launch uses, alike on every rank
  std::string declined;  // why the device buffers are staged instead; "" when the kernels run
  // [rank]: what each published (declined or not), which the ring's links follow
  std::vector<GpuFacts> facts = {};
  // [rank]: whether another rank is a thread of its process on its GPU (declined or not)
  std::vector<bool> sharesGpuWithThread = {};
};

// Where a rank runs: its machine (PeerInfo::machine: whose GPUs it sees), and its process, told
// apart by host (PeerInfo::hostId: namespaces have pids of their own) and pid.
struct RankProcess {
  std::string machine;
  std::string host;
  int64_t pid = 0;
  auto operator<=>(const RankProcess&) const = default;
};

// The plan from every rank's facts and process ([rank]) and TUTTI_GPU_CHANNELS: per GPU (its UUID
// on its machine), its ranks share the blocks it holds (the fewest any of them reports), which
// caps the channels; a rank whose facts are unusable, a GPU that two ranks of one process share
// (on an H200 such thread ranks hung now and then: their streams share one context's hardware
// queues), one that ranks of several processes share without MPS, or one that holds less than a
// channel per rank, declines the kernels. Which ranks share a GPU with a thread of their process is
// recorded whatever declines (DeviceSide::hostOrdersStreams reads it).
KernelPlan planKernels(const std::vector<GpuFacts>& ranks,
                       const std::vector<RankProcess>& processes, int maxChannels);

}  // namespace tutti::runtime::gpu
