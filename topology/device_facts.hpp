// What the device libraries say about this machine's HCAs (libibverbs) and GPUs (NVML, CUDA
// runtime), keyed by PCI bus id so that the hwloc reader attaches them to the NIC and GPU nodes it
// finds in the PCI tree. Both libraries are loaded with dlopen: a machine without them (or without
// the devices) yields empty lists, logged at INFO.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "topology/rdma_nics.hpp"

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
  std::string guid;   // system image GUID, "0x...": the card's (NCCL's guid); empty if unknown
  std::vector<HcaPort> ports;
};

// A port of a card as the graph gets it.
struct CardPort {
  std::string busId;  // the NET node's name: mlx5_0, or mlx5_0:2 for an HCA with several ports
  std::string name;   // its HCA's, mlx5_0
  int port = 0;       // its HCA's port number plus the active ports of the card's HCAs before it
  double mbps = 0;
  std::string linkLayer;
};

// One network card: an HCA, with the other PCI functions of its device that are HCAs of the same
// GUID (a dual-port card whose ports are two functions, two HCAs). NCCL merges these into one NIC
// (function 0's), its ports numbered 1, 2 across the functions; so does the graph.
struct HcaCard {
  std::string busId;             // the NIC's: the card's first function
  std::string guid;              // the first known of its HCAs'
  std::vector<const Hca*> hcas;  // by bus id, busId's first
  std::vector<CardPort> ports;   // the active ports with a known speed, by function and number
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

// The HCAs grouped into cards, in bus id order: those whose bus ids differ only in the PCI
// function and whose GUIDs agree (or one is unknown) are one card. The HCAs must outlive the
// cards.
std::vector<HcaCard> hcaCards(const std::vector<Hca>& hcas);

std::vector<Hca> probeHcas();
// The same facts from sysfs' view of the devices (readRdmaDevices): for a machine whose
// libibverbs is missing or lists nothing while the kernel has RDMA devices (a container without
// rdma-core). GUIDs as libibverbs' ("0x" and the system image GUID's hex digits).
std::vector<Hca> hcasFromSysfs(const std::vector<RdmaDevice>& devices);
std::vector<GpuFacts> probeGpus();

}  // namespace tutti::topology
