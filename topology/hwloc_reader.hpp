// One reader for both hwloc sources: the live machine (the probe) and an hwloc XML file (the
// import). The device facts (HCA ports, GPU SM versions and NVLinks) are attached to the NIC and
// GPU nodes by PCI bus id; the import passes none, as they describe this machine, not the file's.
#pragma once

#include <string>

#include "topology/device_facts.hpp"
#include "topology/topology.hpp"

namespace tutti::topology {

// xmlPath empty: the live machine (PCIe links and port speeds from sysfs); otherwise that file
// (PCIe links decoded from hwloc's link speed, port speeds unknown). withIo false: CPUs and
// hardware threads only.
Topology readHwloc(const std::string& xmlPath, const DeviceFacts& facts, bool withIo = true);

}  // namespace tutti::topology
