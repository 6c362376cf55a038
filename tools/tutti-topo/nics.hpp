// What tutti-topo prints about this machine's RDMA NICs (read from sysfs): a line per port in the
// default output, and with --nics each device, its ports, the ports TUTTI_IB_HCA leaves in use and
// every non-zero error counter. Error counters are marked "!" (and red on a terminal).
#pragma once

#include <string>
#include <vector>

#include "topology/topology.hpp"

namespace tutti::tools {

struct NicReport {
  std::string root;  // the sysfs root read
  std::vector<topology::RdmaDevice> devices;
  bool colour = false;  // ANSI red for errors
};

// "RDMA NIC ports (sysfs /sys):" then one line per port; "...: none" without devices.
std::string formatNicPorts(const NicReport& report);
// Each device (PCI place, GUIDs, whether libibverbs lists it), its ports (which are used under
// `selector`, given as `selectorText`), their error counters and the device's, skipped files; then
// the ports in use.
std::string formatNics(const NicReport& report, const topology::HcaSelector& selector,
                       const std::string& selectorText);

}  // namespace tutti::tools
