// GPUs through NVML and the CUDA runtime, both dlopen'd so that tutti has no link-time dependency
// on a driver: each GPU's bus id, SM version and NVLinks (per link: active or not, the remote
// end's bus id and whether it is an NVSwitch), and its CUDA device ordinal when the runtime is
// there. NVML's own declarations are repeated here (the header ships with the CUDA toolkit, not
// with the driver); they are stable across NVML versions.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "base/log.hpp"
#include "topology/device_facts.hpp"
#include "topology/shared_library.hpp"

namespace tutti::topology {
namespace {

using NvmlDevice = struct NvmlDeviceOpaque*;
struct NvmlPciInfo {  // nvmlPciInfo_t
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
constexpr int kNvmlSuccess = 0;
constexpr unsigned kNvmlMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS (Hopper)
constexpr int kNvmlLinkToSwitch = 2;    // NVML_NVLINK_DEVICE_TYPE_SWITCH

struct Nvml {
  SharedLibrary lib{"libnvidia-ml.so.1", "libnvidia-ml.so"};
  int (*init)() = lib.symbol<int()>("nvmlInit_v2");
  int (*count)(unsigned*) = lib.symbol<int(unsigned*)>("nvmlDeviceGetCount_v2");
  int (*handle)(unsigned, NvmlDevice*) =
      lib.symbol<int(unsigned, NvmlDevice*)>("nvmlDeviceGetHandleByIndex_v2");
  int (*pciInfo)(NvmlDevice, NvmlPciInfo*) =
      lib.symbol<int(NvmlDevice, NvmlPciInfo*)>("nvmlDeviceGetPciInfo_v3");
  int (*capability)(NvmlDevice, int*, int*) =
      lib.symbol<int(NvmlDevice, int*, int*)>("nvmlDeviceGetCudaComputeCapability");
  int (*linkState)(NvmlDevice, unsigned,
                   int*) = lib.symbol<int(NvmlDevice, unsigned, int*)>("nvmlDeviceGetNvLinkState");
  int (*remotePci)(NvmlDevice, unsigned, NvmlPciInfo*) =
      lib.symbol<int(NvmlDevice, unsigned, NvmlPciInfo*)>("nvmlDeviceGetNvLinkRemotePciInfo_v2");
  // Absent before NVML 11.4: then a remote end that is not a probed GPU counts as an NVSwitch.
  int (*remoteType)(NvmlDevice, unsigned, int*) =
      lib.symbol<int(NvmlDevice, unsigned, int*)>("nvmlDeviceGetNvLinkRemoteDeviceType");
  bool ready = lib.loaded() && init && count && handle && pciInfo && capability && linkState &&
               remotePci && init() == kNvmlSuccess;
};

struct CudaRuntime {
  SharedLibrary lib{"libcudart.so", "libcudart.so.12", "libcudart.so.11.0"};
  int (*deviceByBusId)(int*,
                       const char*) = lib.symbol<int(int*, const char*)>("cudaDeviceGetByPCIBusId");
};

std::string busIdOf(const NvmlPciInfo& pci) {
  return fmt::format("{:04x}:{:02x}:{:02x}.0", pci.domain, pci.bus, pci.device);
}

GpuFacts describe(const Nvml& nvml, NvmlDevice device) {
  GpuFacts gpu;
  NvmlPciInfo pci{};
  if (nvml.pciInfo(device, &pci) == kNvmlSuccess) gpu.busId = busIdOf(pci);
  int major = 0, minor = 0;
  if (nvml.capability(device, &major, &minor) == kNvmlSuccess) gpu.sm = major * 10 + minor;
  std::map<std::string, NvLinkPeer> peers;
  for (unsigned link = 0; link < kNvmlMaxLinks; ++link) {
    int active = 0;
    NvmlPciInfo remote{};
    if (nvml.linkState(device, link, &active) != kNvmlSuccess || !active) continue;
    if (nvml.remotePci(device, link, &remote) != kNvmlSuccess) continue;
    NvLinkPeer& peer = peers[busIdOf(remote)];
    peer.busId = busIdOf(remote);
    int type = -1;
    if (nvml.remoteType && nvml.remoteType(device, link, &type) == kNvmlSuccess)
      peer.isSwitch = type == kNvmlLinkToSwitch;
    ++peer.count;
  }
  for (auto& [busId, peer] : peers) gpu.nvlinks.push_back(peer);
  return gpu;
}

}  // namespace

std::vector<GpuFacts> probeGpus() {
  static const Nvml nvml;
  if (!nvml.ready) {
    log::info("topology probe: NVML not available: no GPU SM versions or NVLinks probed");
    return {};
  }
  unsigned count = 0;
  if (nvml.count(&count) != kNvmlSuccess) count = 0;
  std::vector<GpuFacts> gpus;
  for (unsigned i = 0; i < count; ++i) {
    NvmlDevice device = nullptr;
    if (nvml.handle(i, &device) == kNvmlSuccess) gpus.push_back(describe(nvml, device));
  }
  bool switchTypeKnown = nvml.remoteType != nullptr;
  for (GpuFacts& gpu : gpus)
    for (NvLinkPeer& peer : gpu.nvlinks)
      if (!switchTypeKnown)
        peer.isSwitch = std::none_of(gpus.begin(), gpus.end(), [&](const GpuFacts& other) {
          return other.busId == peer.busId;
        });
  if (!gpus.empty()) {
    static const CudaRuntime cuda;  // only now: loading it costs the driver's initialisation
    for (GpuFacts& gpu : gpus)
      if (cuda.deviceByBusId && cuda.deviceByBusId(&gpu.dev, gpu.busId.c_str()) != 0) gpu.dev = -1;
  }
  for (const GpuFacts& gpu : gpus)
    log::info("topology probe: GPU {} sm {} dev {}, NVLinks to {} peers", gpu.busId, gpu.sm,
              gpu.dev, gpu.nvlinks.size());
  return gpus;
}

}  // namespace tutti::topology
