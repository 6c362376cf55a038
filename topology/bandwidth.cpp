// NCCL's bandwidth figures (src/graph/topo.h): PCIe per lane in units of 100 Mb/s divided by 80,
// NVLink per lane by SM version, CPU interconnects by vendor and model.
#include "topology/bandwidth.hpp"

#include <charconv>

namespace tutti::topology {

namespace {
struct Gen {
  double gts, laneBw;
};
constexpr Gen kGens[] = {{2.5, 15 / 80.0}, {5, 30 / 80.0},   {8, 60 / 80.0},
                         {16, 120 / 80.0}, {32, 240 / 80.0}, {64, 480 / 80.0}};
}  // namespace

std::optional<double> pcieGts(std::string_view linkSpeed) {
  double gts = 0;
  auto [end, ec] = std::from_chars(linkSpeed.data(), linkSpeed.data() + linkSpeed.size(), gts);
  if (ec != std::errc()) return std::nullopt;
  for (const Gen& gen : kGens)
    if (gts == gen.gts) return gts;
  return std::nullopt;
}

double pcieLaneBw(double gts) {
  for (const Gen& gen : kGens)
    if (gts == gen.gts) return gen.laneBw;
  return 0;
}

double nvlinkBw(int sm) {
  if (sm >= 100) return 40.1;
  if (sm >= 90) return 20.6;
  if (sm == 86 || sm == 89) return 12.0;
  if (sm >= 70 || sm == 0) return 20.0;
  return 18.0;
}

double smpBw(const std::string& arch, const std::string& vendor, int model) {
  if (arch == "ppc64") return 32.0;
  if (vendor == "AuthenticAMD") return 16.0;
  if (vendor == "GenuineIntel") {
    if (model >= 143) return 22.0;  // Sapphire Rapids and later (UPI 2.0)
    if (model >= 85) return 10.0;   // Skylake / Cascade Lake (UPI)
    return 6.0;                     // Broadwell and earlier (QPI)
  }
  return 6.0;  // arm64 and unknown
}

}  // namespace tutti::topology
