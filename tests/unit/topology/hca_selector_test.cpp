// TUTTI_IB_HCA: NCCL_IB_HCA's syntax parsed once into a selector, its matches as NCCL's
// matchIfList makes them (NCCL's documented examples among them), bad values refused naming the
// variable and the bad part; and the ports a fixture machine offers under a selector.
#include <fmt/format.h>

#include "base/error.hpp"
#include "helpers.hpp"

namespace tutti::topology::test {
namespace {

using Names = std::vector<std::string>;

// "device:port" of every port the selector takes among those given.
Names taken(const std::string& spec) {
  const HcaSelector selector = parseHcaSelector(spec);
  Names out;
  for (const char* device : {"mlx5_0", "mlx5_1", "mlx5_10", "mlx5_3", "mlx5_4", "bnxt_re0"})
    for (int port : {1, 2})
      if (selector.selects(device, port)) out.push_back(fmt::format("{}:{}", device, port));
  return out;
}

TEST_CASE("TUTTI_IB_HCA selects as NCCL_IB_HCA does", "[rdma][ib-hca]") {
  const Names every = {"mlx5_0:1", "mlx5_0:2", "mlx5_1:1", "mlx5_1:2", "mlx5_10:1",  "mlx5_10:2",
                       "mlx5_3:1", "mlx5_3:2", "mlx5_4:1", "mlx5_4:2", "bnxt_re0:1", "bnxt_re0:2"};
  CHECK(taken("") == every);
  // NCCL's documentation: "mlx5" every port of every card starting with mlx5.
  CHECK(taken("mlx5") == Names(every.begin(), every.end() - 2));
  // "=mlx5_0:1,mlx5_1:1": port 1 of mlx5_0 and mlx5_1.
  CHECK(taken("=mlx5_0:1,mlx5_1:1") == Names{"mlx5_0:1", "mlx5_1:1"});
  // "^=mlx5_1,mlx5_4": not cards mlx5_1 and mlx5_4.
  CHECK(taken("^=mlx5_1,mlx5_4") == Names{"mlx5_0:1", "mlx5_0:2", "mlx5_10:1", "mlx5_10:2",
                                          "mlx5_3:1", "mlx5_3:2", "bnxt_re0:1", "bnxt_re0:2"});
  // Prefixes: mlx5_1 takes mlx5_10 too (NCCL's documented pitfall); '=' does not.
  CHECK(taken("mlx5_1") == Names{"mlx5_1:1", "mlx5_1:2", "mlx5_10:1", "mlx5_10:2"});
  CHECK(taken("=mlx5_1") == Names{"mlx5_1:1", "mlx5_1:2"});
  // The brief's examples: a port and a whole device; an exclusion.
  CHECK(taken("mlx5_0:1,mlx5_1") ==
        Names{"mlx5_0:1", "mlx5_1:1", "mlx5_1:2", "mlx5_10:1", "mlx5_10:2"});
  CHECK(taken("^mlx5_3") == Names{"mlx5_0:1", "mlx5_0:2", "mlx5_1:1", "mlx5_1:2", "mlx5_10:1",
                                  "mlx5_10:2", "mlx5_4:1", "mlx5_4:2", "bnxt_re0:1", "bnxt_re0:2"});
  // Excluding one port keeps the others of that device.
  CHECK(taken("^=mlx5_0:2,mlx5_1,mlx5_10,mlx5_3,mlx5_4,bnxt_re0") == Names{"mlx5_0:1"});
  // Empty entries are skipped, as NCCL skips them.
  CHECK(taken("=mlx5_0,,mlx5_3,") == Names{"mlx5_0:1", "mlx5_0:2", "mlx5_3:1", "mlx5_3:2"});
}

TEST_CASE("TUTTI_IB_HCA parses into entries once", "[rdma][ib-hca]") {
  const HcaSelector selector = parseHcaSelector("^=mlx5_0:1,mlx5_1");
  CHECK(selector.exclude);
  CHECK(selector.exact);
  REQUIRE(selector.entries.size() == 2);
  CHECK(selector.entries[0].device == "mlx5_0");
  CHECK(selector.entries[0].port == 1);
  CHECK(selector.entries[1].device == "mlx5_1");
  CHECK(selector.entries[1].port == -1);
  CHECK(parseHcaSelector("mlx5_0:255").entries.at(0).port == 255);
}

TEST_CASE("a bad TUTTI_IB_HCA is an error naming the variable and the bad part", "[rdma][ib-hca]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"^", "names no device"},
      {"=", "names no device"},
      {"^=,", "names no device"},
      {",", "names no device"},
      {":1", "':1' names no device"},
      {"mlx5_0:", "port '' in 'mlx5_0:' is not a port number (1..255)"},
      {"mlx5_0:x", "port 'x' in 'mlx5_0:x' is not a port number"},
      {"mlx5_0:0", "port '0' in 'mlx5_0:0' is not a port number"},
      {"mlx5_0:256", "port '256' in 'mlx5_0:256' is not a port number"},
      {"mlx5_0:1x", "port '1x' in 'mlx5_0:1x'"},
      {"mlx5_0:-1", "port '-1' in 'mlx5_0:-1'"},
      {"mlx5_0:1:2", "port '1:2' in 'mlx5_0:1:2'"},
      {"mlx5_0:99999999999", "port '99999999999'"},
      {"=^mlx5_0", "'^' in device name '^mlx5_0'"},
      {"^^mlx5_0", "'^' in device name '^mlx5_0'"},
      {"mlx5_0 ,mlx5_1", "' ' in device name 'mlx5_0 '"},
      {"mlx5_0;mlx5_1", "';' in device name 'mlx5_0;mlx5_1'"},
      {std::string(64, 'm'), "is longer than 63 bytes"},
  };
  for (const auto& [spec, why] : cases) {
    INFO(spec);
    try {
      parseHcaSelector(spec);
      FAIL("accepted");
    } catch (const Error& error) {
      CHECK(error.code() == ErrorCode::kInvalidArgument);
      CHECK_THAT(error.what(), Catch::StartsWith("TUTTI_IB_HCA='" + spec + "': "));
      CHECK_THAT(error.what(), Catch::Contains(why));
    }
  }
  CHECK_THROWS_WITH(parseHcaSelector("x:0", "NCCL_IB_HCA"), Catch::StartsWith("NCCL_IB_HCA='x:0'"));
}

// "device:port" of the ports chosen on a fixture machine.
Names chosen(const std::vector<RdmaDevice>& devices, const std::string& spec) {
  Names out;
  for (const RdmaPortRef& ref : selectRdmaPorts(devices, parseHcaSelector(spec)))
    out.push_back(fmt::format("{}:{}", ref.device->name, ref.port->number));
  return out;
}

TEST_CASE("selectRdmaPorts: the active ports the selector takes", "[rdma][ib-hca]") {
  const std::vector<RdmaDevice> ib =
      readRdmaDevices(std::string(TUTTI_SYSFS_FIXTURES) + "/ib-cx6-vpi");
  // mlx5_2's port is down: never chosen, even when named.
  CHECK(chosen(ib, "") == Names{"mlx5_0:1", "mlx5_1:1"});
  CHECK(chosen(ib, "=mlx5_2") == Names{});
  CHECK(chosen(ib, "^mlx5_0") == Names{"mlx5_1:1"});
  CHECK(chosen(ib, "mlx5_1:2") == Names{});
  const std::vector<RdmaDevice> roce =
      readRdmaDevices(std::string(TUTTI_SYSFS_FIXTURES) + "/roce-cx6dx");
  // RoCE and iWARP ports have an Ethernet link layer: usable.
  CHECK(chosen(roce, "") == Names{"i40iw0:1", "mlx5_0:1", "mlx5_1:1"});
  CHECK(chosen(roce, "mlx5") == Names{"mlx5_0:1", "mlx5_1:1"});
  // A port whose link layer is unknown is not used.
  std::vector<RdmaDevice> unknown = roce;
  unknown[1].ports[0].linkLayer = "Unknown";
  CHECK(chosen(unknown, "mlx5") == Names{"mlx5_1:1"});
}

}  // namespace
}  // namespace tutti::topology::test
