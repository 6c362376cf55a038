// The pure parts of the device probes: InfiniBand speed x width enums to port speed (values from
// the InfiniBand specification as ibv_port_attr encodes them), NVLink per-lane rates by SM
// version (NCCL's figures), bus ids from sysfs links, HCAs grouped into cards (the PCI functions of
// a dual-port card are one NIC); and the probes on this machine, which may have no HCA and no GPU:
// then they find none, without an error or a warning.
#include "topology/device_facts.hpp"

#include <fmt/format.h>

#include "helpers.hpp"
#include "topology/bandwidth.hpp"

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

TEST_CASE("HCAs on PCI functions of one device with one GUID are one card, as NCCL merges them") {
  const std::vector<Hca> hcas = {
      // A dual-port card of two functions, listed out of order: one card, ports 1 and 2.
      {"mlx5_1", "0000:0c:00.1", "0x9a70500003ae6d94", {{1, true, 200000, "IB"}}},
      {"mlx5_0", "0000:0c:00.0", "0x9a70500003ae6d94", {{1, true, 200000, "IB"}}},
      // Two ports on one function: one card, its ports named by number.
      {"mlx5_2", "0000:2a:00.0", "0x2", {{1, true, 100000, "Ethernet"}, {2, true, 100000, "IB"}}},
      // Another function of that device with another GUID: another card.
      {"mlx5_3", "0000:2a:00.1", "0x3", {{1, true, 100000, "IB"}}},
      // A function whose GUID is unknown (the device did not open) joins its device's card.
      {"mlx5_4", "0000:3b:00.0", "", {}},
      {"mlx5_5", "0000:3b:00.1", "0x5", {{1, true, 400000, "IB"}}},
      // Function 0's port is down: function 1's port is the card's first.
      {"mlx5_6", "0000:4c:00.0", "0x6", {{1, false, 0, "IB"}}},
      {"mlx5_7", "0000:4c:00.1", "0x6", {{1, true, 200000, "IB"}}},
      // The same GUID on two PCI devices: two cards (NCCL merges functions, not GUIDs).
      {"mlx5_8", "0000:5d:00.0", "0x8", {{1, true, 200000, "IB"}}},
      {"mlx5_9", "0000:5e:00.0", "0x8", {{1, true, 200000, "IB"}}},
  };
  std::vector<HcaCard> cards = hcaCards(hcas);
  REQUIRE(cards.size() == 7);
  auto names = [](const HcaCard& card) {
    std::vector<std::string> out;
    for (const Hca* hca : card.hcas) out.push_back(hca->name);
    return out;
  };
  auto ports = [](const HcaCard& card) {
    std::vector<std::string> out;
    for (const CardPort& port : card.ports)
      out.push_back(fmt::format("{} {} port {} {} {}", port.busId, port.name, port.port, port.mbps,
                                port.linkLayer));
    return out;
  };
  using Strings = std::vector<std::string>;
  CHECK(cards[0].busId == "0000:0c:00.0");
  CHECK(cards[0].guid == "0x9a70500003ae6d94");
  CHECK(names(cards[0]) == Strings{"mlx5_0", "mlx5_1"});
  CHECK(ports(cards[0]) ==
        Strings{"mlx5_0 mlx5_0 port 1 200000 IB", "mlx5_1 mlx5_1 port 2 200000 IB"});
  CHECK(cards[1].busId == "0000:2a:00.0");
  CHECK(ports(cards[1]) ==
        Strings{"mlx5_2:1 mlx5_2 port 1 100000 Ethernet", "mlx5_2:2 mlx5_2 port 2 100000 IB"});
  CHECK(cards[2].busId == "0000:2a:00.1");
  CHECK(names(cards[2]) == Strings{"mlx5_3"});
  CHECK(cards[3].busId == "0000:3b:00.0");
  CHECK(cards[3].guid == "0x5");
  CHECK(names(cards[3]) == Strings{"mlx5_4", "mlx5_5"});
  CHECK(ports(cards[3]) == Strings{"mlx5_5 mlx5_5 port 1 400000 IB"});
  CHECK(names(cards[4]) == Strings{"mlx5_6", "mlx5_7"});
  CHECK(ports(cards[4]) == Strings{"mlx5_7 mlx5_7 port 1 200000 IB"});
  CHECK(names(cards[5]) == Strings{"mlx5_8"});
  CHECK(names(cards[6]) == Strings{"mlx5_9"});
  CHECK(hcaCards({}).empty());
}

TEST_CASE("the device probes find what this machine has, quietly when it has none") {
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
