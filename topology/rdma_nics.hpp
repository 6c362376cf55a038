// RDMA NICs as the kernel describes them under /sys/class/infiniband (InfiniBand HCAs, RoCE and
// iWARP NICs alike): devices, their PCI place, ports with state, rate, link layer, GID 0 and the
// port's error counters; and TUTTI_IB_HCA, NCCL_IB_HCA's syntax, which picks the ports to use.
// The sysfs root is a parameter (TUTTI_SYSFS_ROOT for the probe), so that tests read fixture
// trees; libibverbs is asked only which devices it can open. Part of the layer's API: included by
// topology/topology.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tutti::topology {

struct RdmaCounter {
  std::string name;  // the file's name: symbol_error, out_of_buffer
  uint64_t value = 0;
  bool hw = false;     // from hw_counters/ (the driver's own), not counters/ (the IB PMA's)
  bool error = false;  // counts errors, drops or discards (isRdmaErrorCounter)
};

struct RdmaPort {
  int number = 0;
  int state = 0;  // 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER; 0 unknown
  std::string stateName;
  int physState = 0;  // 5 LinkUp; 2 Polling, 3 Disabled, ...; 0 unknown
  std::string physStateName;
  std::string rate;                   // as sysfs writes it: "100 Gb/sec (4X EDR)"
  double mbps = 0;                    // from rate; 0 unknown
  std::string linkLayer;              // "InfiniBand", "Ethernet" (RoCE, iWARP); empty unknown
  std::string gid0;                   // GID index 0, "fe80:0000:..."
  std::string gid0Type;               // "IB/RoCE v1" or "RoCE v2"; empty where sysfs does not say
  std::vector<RdmaCounter> counters;  // counters/ then hw_counters/, each by name
  std::vector<std::string> skipped;   // files present but not read, with why
  bool noPma = false;  // counters/ reads "N/A (no PMA)": the device has no port counters

  bool active() const { return state == 4; }
  // The error counters that are not zero.
  std::vector<RdmaCounter> errors() const;
};

struct RdmaDevice {
  std::string name;     // mlx5_0
  std::string busId;    // 0000:5e:00.0; empty for a device without PCI function (rxe, siw)
  std::string pciPath;  // below <root>/devices: "pci0000:5d/0000:5d:00.0/0000:5e:00.0"
  int numaNode = -1;    // -1 unknown
  std::string nodeGuid, sysImageGuid;  // as sysfs writes them: "a088:c203:007e:1dba"
  bool verbs = false;  // libibverbs lists it (asked only when the root is the live /sys)
  std::vector<RdmaCounter> counters;  // the device's own hw_counters/ (hfi1, some drivers)
  std::vector<RdmaPort> ports;
  std::vector<std::string> skipped;

  // The error counters that are not zero.
  std::vector<RdmaCounter> errors() const;
};

// kSkip leaves the ports' counters unread: reading counters/ makes the kernel query the HCA's
// performance agent (a MAD per file), which a topology probe has no use for.
enum class RdmaCounters { kRead, kSkip };
// The devices under <root>/class/infiniband, by name. A root that is not a directory is an error
// (kInvalidArgument naming it); no class/infiniband is no device. A file missing leaves its field
// unknown; a file that cannot be read or parsed is listed in `skipped` (logged at INFO), never an
// error: one odd driver must not hide the other NICs.
std::vector<RdmaDevice> readRdmaDevices(const std::string& sysfsRoot,
                                        RdmaCounters counters = RdmaCounters::kRead);
// TUTTI_SYSFS_ROOT, or "/sys".
std::string sysfsRoot();
// readRdmaDevices(sysfsRoot()), with `verbs` set from libibverbs when the root is /sys. Errors
// name TUTTI_SYSFS_ROOT.
std::vector<RdmaDevice> probeRdmaDevices();

// Errors, drops and discards: a name holding "err", "discard", "drop", "downed" or "out_of_"
// (symbol_error, port_xmit_discards, VL15_dropped, link_downed, out_of_buffer), or
// duplicate_request. Traffic, waits and congestion notifications are not errors.
bool isRdmaErrorCounter(std::string_view name);

// TUTTI_IB_HCA, as NCCL reads NCCL_IB_HCA: a comma-separated list of device[:port]; a device
// matches by prefix ("mlx5_1" takes mlx5_10 too) unless the list starts with '=' (whole names);
// '^' first excludes the listed ones instead ("^=mlx5_1,mlx5_4"). An entry without a port takes
// every port. Empty: every device.
struct HcaSelector {
  struct Entry {
    std::string device;
    int port = -1;  // -1: every port
  };
  bool exclude = false, exact = false;
  std::vector<Entry> entries;

  bool selects(std::string_view device, int port) const;
};
// Throws kInvalidArgument naming `variable`, the value and the bad part: an empty entry list
// after '^' or '=', a port that is not 1..255, a device name empty or with a character other
// than letters, digits, '_', '-' and '.', or longer than 63 bytes (the kernel's limit).
HcaSelector parseHcaSelector(std::string_view spec, std::string_view variable = "TUTTI_IB_HCA");
// TUTTI_IB_HCA, parsed.
HcaSelector hcaSelectorFromEnv();

struct RdmaPortRef {
  const RdmaDevice* device = nullptr;
  const RdmaPort* port = nullptr;
};
// The ports to use, in device and port order: active, with an InfiniBand or Ethernet link layer
// (NCCL's rule), and selected. The devices must outlive the result.
std::vector<RdmaPortRef> selectRdmaPorts(const std::vector<RdmaDevice>& devices,
                                         const HcaSelector& selector);

}  // namespace tutti::topology
