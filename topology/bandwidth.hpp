// Link bandwidths in GB/s per direction, with NCCL's figures (derated from the raw signalling
// rates to what transfers achieve), so that searches compare as NCCL's do.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tutti::topology {

// The transfer rate of a link_speed such as "16 GT/s" or "32.0 GT/s PCIe"; nullopt when the text
// names no known PCIe generation (empty, "Unknown").
std::optional<double> pcieGts(std::string_view linkSpeed);
// Per PCIe lane at a known generation's rate.
double pcieLaneBw(double gts);
// Per NVLink lane for a GPU of this SM version (0: unknown, taken as Volta's).
double nvlinkBw(int sm);
// Between two CPU packages of one host (QPI/UPI, Infinity Fabric, ...).
double smpBw(const std::string& arch, const std::string& vendor, int model);
// A network port's speed in Mb/s.
inline double netBw(double speedMbps) {
  return speedMbps / 8000.0;
}

}  // namespace tutti::topology
