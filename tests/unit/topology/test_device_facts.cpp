// The pure parts of the device probes: InfiniBand speed x width enums to port speed (values from
// the InfiniBand specification as ibv_port_attr encodes them), NVLink per-lane rates by SM
// version (NCCL's figures), bus ids from sysfs links; and the probes on this machine, which may
// have no HCA and no GPU: then they find none, without an error or a warning.
#include "helpers.hpp"
#include "topology/bandwidth.hpp"
#include "topology/device_facts.hpp"

namespace tutti::topology::test {
namespace {

TEST_CASE("InfiniBand active speed x width gives the port speed") {
  // active_speed: 1 SDR 2.5, 2 DDR 5, 4 QDR 10, 8 FDR10 10, 16 FDR 14, 32 EDR 25, 64 HDR 50,
  // 128 NDR 100 Gb/s per lane; active_width: 1 1x, 2 4x, 4 8x, 8 12x, 16 2x.
  CHECK(ibPortMbps(1, 1) == 2500);
  CHECK(ibPortMbps(4, 2) == 40000);
  CHECK(ibPortMbps(16, 2) == 56000);
  CHECK(ibPortMbps(32, 2) == 100000);
  CHECK(ibPortMbps(64, 2) == 200000);
  CHECK(ibPortMbps(128, 2) == 400000);
  CHECK(ibPortMbps(64, 16) == 100000);
  CHECK(ibPortMbps(2, 8) == 60000);
  CHECK(ibPortMbps(0, 2) == 0);
  CHECK(ibPortMbps(32, 0) == 0);
  CHECK(ibPortMbps(3, 2) == 0);  // not one speed
  CHECK(netBw(ibPortMbps(64, 2)) == Approx(25));
}

TEST_CASE("NVLink per-lane rate follows the GPU generation") {
  CHECK(nvlinkBw(60) == Approx(18));     // Pascal
  CHECK(nvlinkBw(70) == Approx(20));     // Volta
  CHECK(nvlinkBw(80) == Approx(20));     // Ampere A100
  CHECK(nvlinkBw(86) == Approx(12));     // Ampere consumer
  CHECK(nvlinkBw(89) == Approx(12));     // Ada
  CHECK(nvlinkBw(90) == Approx(20.6));   // Hopper
  CHECK(nvlinkBw(100) == Approx(40.1));  // Blackwell
  CHECK(nvlinkBw(0) == Approx(20));      // unknown: Volta's
}

TEST_CASE("a sysfs device link gives the bus id") {
  CHECK(busIdFromSysfsLink("../../../0000:3B:00.0") == "0000:3b:00.0");
  CHECK(busIdFromSysfsLink("0000:01:00.1") == "0000:01:00.1");
  CHECK(busIdFromSysfsLink("") == "");
}

TEST_CASE("the device probes find what this machine has, quietly when it has none") {
  WarningGuard guard;
  for (const Hca& hca : probeHcas()) {
    CHECK(!hca.name.empty());
    CHECK(!hca.busId.empty());
  }
  for (const GpuFacts& gpu : probeGpus()) {
    CHECK(!gpu.busId.empty());
    CHECK(gpu.sm > 0);
  }
}

}  // namespace
}  // namespace tutti::topology::test
