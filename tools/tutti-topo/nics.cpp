#include "nics.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace tutti::tools {
namespace {

using topology::RdmaCounter;
using topology::RdmaDevice;
using topology::RdmaPort;

std::string portSummary(const RdmaPort& port) {
  auto known = [](const std::string& text) { return text.empty() ? std::string("?") : text; };
  std::string out = fmt::format("{} ({}), {}, {}", known(port.stateName), known(port.physStateName),
                                known(port.rate), known(port.linkLayer));
  if (!port.gid0.empty())
    out += fmt::format(", GID {}{}", port.gid0,
                       port.gid0Type.empty() ? "" : " (" + port.gid0Type + ")");
  return out;
}

// "! errors: link_downed 255, port_xmit_discards 65535" or "" when none.
std::string errorLine(const std::vector<RdmaCounter>& errors, bool colour) {
  if (errors.empty()) return "";
  std::string list;
  for (const RdmaCounter& error : errors)
    list += fmt::format("{}{}{} {}", list.empty() ? "" : ", ", error.hw ? "hw_counters/" : "",
                        error.name, error.value);
  const std::string line = "! errors: " + list;
  return colour ? "\033[31m" + line + "\033[0m" : line;
}

std::string place(const RdmaDevice& device) {
  if (device.busId.empty()) return "no PCI function";
  return fmt::format("{} NUMA {}", device.busId,
                     device.numaNode >= 0 ? std::to_string(device.numaNode) : "?");
}

}  // namespace

std::string formatNicPorts(const NicReport& report) {
  size_t ports = 0;
  for (const RdmaDevice& device : report.devices) ports += device.ports.size();
  if (ports == 0) return fmt::format("RDMA NIC ports (sysfs {}): none\n", report.root);
  std::string out = fmt::format("RDMA NIC ports (sysfs {}):\n", report.root);
  for (const RdmaDevice& device : report.devices)
    for (const RdmaPort& port : device.ports) {
      out += fmt::format("  {}:{} {}, {}\n", device.name, port.number, portSummary(port),
                         place(device));
      if (std::string errors = errorLine(port.errors(), report.colour); !errors.empty())
        out += "    " + errors + "\n";
    }
  return out;
}

std::string formatNics(const NicReport& report, const topology::HcaSelector& selector,
                       const std::string& selectorText) {
  const std::vector<topology::RdmaPortRef> used = selectRdmaPorts(report.devices, selector);
  auto isUsed = [&](const RdmaPort& port) {
    return std::any_of(used.begin(), used.end(),
                       [&](const topology::RdmaPortRef& ref) { return ref.port == &port; });
  };
  std::string out =
      fmt::format("RDMA NICs (sysfs {}){}\n", report.root, report.devices.empty() ? ": none" : ":");
  for (const RdmaDevice& device : report.devices) {
    out += fmt::format("{}: {}{}\n", device.name, place(device),
                       device.pciPath.empty() ? "" : ", PCI path " + device.pciPath);
    out += fmt::format("  node GUID {}, system image GUID {}, libibverbs: {}\n",
                       device.nodeGuid.empty() ? "?" : device.nodeGuid,
                       device.sysImageGuid.empty() ? "?" : device.sysImageGuid,
                       device.verbs ? "yes" : "no");
    if (std::string errors = errorLine(device.errors(), report.colour); !errors.empty())
      out += "  " + errors + " (the device's)\n";
    for (const RdmaPort& port : device.ports) {
      std::string use = isUsed(port)     ? "used"
                        : !port.active() ? "not used: not active"
                        : selector.selects(device.name, port.number)
                            ? "not used: link layer " + port.linkLayer
                            : "not used: TUTTI_IB_HCA";
      out += fmt::format("  port {}: {}; {}\n", port.number, portSummary(port), use);
      if (std::string errors = errorLine(port.errors(), report.colour); !errors.empty())
        out += "    " + errors + "\n";
      if (port.noPma) out += "    counters: N/A (no PMA)\n";
    }
    for (const std::string& note : device.skipped) out += "  skipped " + note + "\n";
  }
  std::string list;
  for (const topology::RdmaPortRef& ref : used)
    list += fmt::format("{}{}:{}", list.empty() ? "" : ", ", ref.device->name, ref.port->number);
  out += fmt::format("ports in use (TUTTI_IB_HCA={}): {}\n",
                     selectorText.empty() ? "unset" : selectorText, list.empty() ? "none" : list);
  return out;
}

}  // namespace tutti::tools
