// What the device libraries say about this machine's HCAs (libibverbs) and GPUs (NVML, CUDA
// runtime), keyed by PCI bus id so that the hwloc reader attaches them to the NIC and GPU nodes it
// finds in the PCI tree. Both libraries are loaded with dlopen: a machine without them (or without
// the devices) yields empty lists, logged at INFO.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tutti::topology {

struct HcaPort {
  int port = 0;
  bool active = false;
  double mbps = 0;        // active speed x width
  std::string linkLayer;  // "IB" or "Ethernet"
};

struct Hca {
  std::string name;   // mlx5_0
  std::string busId;  // from /sys/class/infiniband/<name>/device, lower case
  std::string guid;   // node GUID, "0x..."
  std::vector<HcaPort> ports;
};

struct NvLinkPeer {
  std::string busId;  // the remote end, lower case
  bool isSwitch = false;
  int count = 0;  // lanes to it
};

struct GpuFacts {
  std::string busId;  // lower case, 0000:00:00.0
  int dev = -1;       // CUDA device ordinal; -1 when the CUDA runtime is absent
  int sm = 0;         // major * 10 + minor
  std::vector<NvLinkPeer> nvlinks;
};

struct DeviceFacts {
  std::vector<Hca> hcas;
  std::vector<GpuFacts> gpus;
};

// Port speed in Mb/s from ibv_port_attr's active_speed and active_width enums (0 if unknown).
double ibPortMbps(uint8_t activeSpeed, uint8_t activeWidth);
// "0000:3b:00.0" from a sysfs device link such as "../../../0000:3b:00.0" (lower case).
std::string busIdFromSysfsLink(const std::string& link);

std::vector<Hca> probeHcas();
std::vector<GpuFacts> probeGpus();

}  // namespace tutti::topology
