// RDMA devices read from sysfs trees: the fixtures of tests/fixtures/sysfs (layouts and values of
// real machines, SOURCES.md), each field checked against the fixture's files by hand; and trees
// written here with a root missing, files missing, unreadable or of the wrong form: a clear error
// for the root, a skipped field with a note otherwise, never a crash.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "base/error.hpp"
#include "helpers.hpp"
#include "topology/device_facts.hpp"

namespace tutti::topology::test {
namespace {

namespace fs = std::filesystem;

std::vector<RdmaDevice> readFixture(const std::string& name) {
  return readRdmaDevices(std::string(TUTTI_SYSFS_FIXTURES) + "/" + name);
}

// "name=value" of a port's counters, in the order read.
std::vector<std::string> listed(const std::vector<RdmaCounter>& counters) {
  std::vector<std::string> out;
  for (const RdmaCounter& counter : counters)
    out.push_back(counter.name + "=" + std::to_string(counter.value));
  return out;
}

using Names = std::vector<std::string>;

TEST_CASE("an InfiniBand card of two PCI functions, a port down and error counters", "[rdma]") {
  const std::vector<RdmaDevice> devices = readFixture("ib-cx6-vpi");
  REQUIRE(devices.size() == 3);
  const RdmaDevice &mlx0 = devices[0], &mlx1 = devices[1], &mlx2 = devices[2];
  CHECK(mlx0.name == "mlx5_0");
  CHECK(mlx0.busId == "0000:5e:00.0");
  CHECK(mlx0.pciPath == "pci0000:5d/0000:5d:00.0/0000:5e:00.0");
  CHECK(mlx0.numaNode == 0);
  CHECK(mlx0.nodeGuid == "0c42:a103:0091:1a40");
  CHECK(mlx0.sysImageGuid == "0c42:a103:0091:1a40");
  CHECK_FALSE(mlx0.verbs);
  CHECK(mlx0.skipped.empty());
  REQUIRE(mlx0.ports.size() == 1);
  const RdmaPort& port0 = mlx0.ports[0];
  CHECK(port0.number == 1);
  CHECK(port0.state == 4);
  CHECK(port0.stateName == "ACTIVE");
  CHECK(port0.active());
  CHECK(port0.physState == 5);
  CHECK(port0.physStateName == "LinkUp");
  CHECK(port0.rate == "200 Gb/sec (4X HDR)");
  CHECK(port0.mbps == 200000);
  CHECK(port0.linkLayer == "InfiniBand");
  CHECK(port0.gid0 == "fe80:0000:0000:0000:0c42:a103:0091:1a40");
  CHECK(port0.gid0Type == "IB/RoCE v1");
  CHECK(port0.counters.size() == 15);
  CHECK(port0.errors().empty());
  CHECK_FALSE(port0.noPma);

  // The second function of the card: its system image GUID is the first's.
  CHECK(mlx1.busId == "0000:5e:00.1");
  CHECK(mlx1.pciPath == "pci0000:5d/0000:5d:00.0/0000:5e:00.1");
  CHECK(mlx1.sysImageGuid == mlx0.sysImageGuid);
  CHECK(mlx1.nodeGuid == "0c42:a103:0091:1a41");
  REQUIRE(mlx1.ports.size() == 1);
  const RdmaPort& port1 = mlx1.ports[0];
  CHECK(port1.active());
  CHECK(port1.counters.size() == 21);
  CHECK(listed(port1.errors()) == Names{"excessive_buffer_overrun_errors=15", "link_downed=255",
                                        "port_rcv_switch_relay_errors=2",
                                        "port_xmit_discards=65535"});
  // Traffic and waits are read, not errors; values past 32 bits survive.
  auto counter = [&](const std::string& name) {
    for (const RdmaCounter& c : port1.counters)
      if (c.name == name) return c;
    FAIL("no counter " << name);
    return RdmaCounter{};
  };
  CHECK(counter("port_xmit_wait").value == 4294967295u);
  CHECK_FALSE(counter("port_xmit_wait").error);
  CHECK(counter("port_xmit_data").value == 205143497464492u);
  CHECK_FALSE(counter("port_xmit_data").hw);
  CHECK(counter("symbol_error").error);

  CHECK(mlx2.name == "mlx5_2");
  CHECK(mlx2.busId == "0000:d8:00.0");
  CHECK(mlx2.pciPath == "pci0000:d7/0000:d7:02.0/0000:d8:00.0");
  CHECK(mlx2.numaNode == 1);
  REQUIRE(mlx2.ports.size() == 1);
  CHECK(mlx2.ports[0].state == 1);
  CHECK(mlx2.ports[0].stateName == "DOWN");
  CHECK_FALSE(mlx2.ports[0].active());
  CHECK(mlx2.ports[0].physStateName == "Polling");
  CHECK(mlx2.ports[0].mbps == 10000);
}

TEST_CASE("RoCE ports with GID types and hw_counters; iWARP without port counters", "[rdma]") {
  const std::vector<RdmaDevice> devices = readFixture("roce-cx6dx");
  REQUIRE(devices.size() == 3);
  // By name: i40iw0 sorts before mlx5_*.
  const RdmaDevice &iwarp = devices[0], &mlx0 = devices[1], &mlx1 = devices[2];
  CHECK(iwarp.name == "i40iw0");
  CHECK(iwarp.busId == "0000:09:00.0");
  CHECK(iwarp.pciPath == "pci0000:05/0000:05:02.0/0000:07:00.0/0000:08:03.0/0000:09:00.0");
  REQUIRE(iwarp.ports.size() == 1);
  CHECK(iwarp.ports[0].noPma);
  CHECK(iwarp.ports[0].counters.empty());
  CHECK(iwarp.ports[0].gid0Type.empty());
  CHECK(iwarp.ports[0].mbps == 10000);
  CHECK(iwarp.skipped.empty());

  CHECK(mlx0.sysImageGuid == "0c42:a103:001d:d12a");
  CHECK(mlx1.sysImageGuid == "0c42:a103:001d:d12a");
  CHECK(mlx0.busId == "0000:3b:00.0");
  CHECK(mlx1.busId == "0000:3b:00.1");
  const RdmaPort &port0 = mlx0.ports.at(0), &port1 = mlx1.ports.at(0);
  CHECK(port0.linkLayer == "Ethernet");
  CHECK(port0.rate == "100 Gb/sec (4X EDR)");
  CHECK(port0.mbps == 100000);
  CHECK(port0.gid0 == "fe80:0000:0000:0000:0e42:a1ff:fe1d:d12a");
  CHECK(port0.gid0Type == "IB/RoCE v1");
  CHECK(port1.gid0Type == "RoCE v2");
  CHECK(port0.errors().empty());
  // hw_counters come after counters/, flagged; only the error ones that are not zero listed.
  CHECK(port1.counters.size() == 12 + 7);
  CHECK(port1.counters.back().hw);
  CHECK(listed(port1.errors()) ==
        Names{"local_ack_timeout_err=3", "out_of_buffer=1432", "out_of_sequence=7"});
}

TEST_CASE("Omni-Path: hw_counters of the port and of the device", "[rdma]") {
  const std::vector<RdmaDevice> devices = readFixture("opa-hfi1");
  REQUIRE(devices.size() == 1);
  const RdmaDevice& hfi = devices[0];
  CHECK(hfi.name == "hfi1_0");
  CHECK(hfi.busId == "0000:81:00.0");
  CHECK(hfi.numaNode == 1);
  CHECK(hfi.counters.size() == 4);
  CHECK(std::all_of(hfi.counters.begin(), hfi.counters.end(),
                    [](const RdmaCounter& c) { return c.hw && c.error; }));
  CHECK(listed(hfi.errors()) == Names{"TxLinkdownErr=2"});
  REQUIRE(hfi.ports.size() == 1);
  const RdmaPort& port = hfi.ports[0];
  CHECK(port.linkLayer == "InfiniBand");
  CHECK(port.gid0 == "fe80:0000:0000:0000:0011:7501:0179:e6a4");
  CHECK(port.gid0Type.empty());  // no gid_attrs here
  CHECK_FALSE(port.noPma);
  CHECK(port.counters.size() == 13);
  CHECK(port.counters.front().name == "DmaWait");
  CHECK(port.counters.front().value == 50646);
  CHECK(listed(port.errors()) == Names{"PktDrop=134"});
  CHECK(hfi.skipped.empty());
  // Left unread on request, the device's too.
  const std::vector<RdmaDevice> fast =
      readRdmaDevices(std::string(TUTTI_SYSFS_FIXTURES) + "/opa-hfi1", RdmaCounters::kSkip);
  CHECK(fast.at(0).counters.empty());
}

TEST_CASE("sysfs' devices as HCA facts: the card of two functions is one, as libibverbs' is",
          "[rdma]") {
  const std::vector<RdmaDevice> devices = readFixture("ib-cx6-vpi");
  const std::vector<Hca> hcas = hcasFromSysfs(devices);
  REQUIRE(hcas.size() == 3);
  CHECK(hcas[0].name == "mlx5_0");
  CHECK(hcas[0].busId == "0000:5e:00.0");
  CHECK(hcas[0].guid == "0xc42a10300911a40");  // libibverbs' form: no leading zeros
  REQUIRE(hcas[0].ports.size() == 1);
  CHECK(hcas[0].ports[0].port == 1);
  CHECK(hcas[0].ports[0].active);
  CHECK(hcas[0].ports[0].mbps == 200000);
  CHECK(hcas[0].ports[0].linkLayer == "IB");
  CHECK(hcas[1].guid == hcas[0].guid);
  CHECK_FALSE(hcas[2].ports.at(0).active);
  const std::vector<HcaCard> cards = hcaCards(hcas);
  REQUIRE(cards.size() == 2);
  CHECK(cards[0].busId == "0000:5e:00.0");
  CHECK(cards[0].hcas.size() == 2);
  REQUIRE(cards[0].ports.size() == 2);
  CHECK(cards[0].ports[0].busId == "mlx5_0");
  CHECK(cards[0].ports[1].busId == "mlx5_1");
  CHECK(cards[0].ports[1].port == 2);
  CHECK(cards[1].ports.empty());  // mlx5_2's port is down
  CHECK(hcasFromSysfs(readFixture("roce-cx6dx"))[1].ports.at(0).linkLayer == "Ethernet");
}

TEST_CASE("counters left unread on request, the rest read alike", "[rdma]") {
  const std::vector<RdmaDevice> all = readFixture("ib-cx6-vpi");
  const std::vector<RdmaDevice> fast =
      readRdmaDevices(std::string(TUTTI_SYSFS_FIXTURES) + "/ib-cx6-vpi", RdmaCounters::kSkip);
  REQUIRE(fast.size() == all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    CHECK(fast[i].busId == all[i].busId);
    CHECK(fast[i].ports.at(0).rate == all[i].ports.at(0).rate);
    CHECK(fast[i].ports.at(0).counters.empty());
    CHECK_FALSE(all[i].ports.at(0).counters.empty());
  }
}

TEST_CASE("the RDMA probe of this machine: no error, no warning", "[rdma]") {
  // This machine may have no RDMA device (then none), or some: each has a name and its ports.
  for (const RdmaDevice& device : probeRdmaDevices()) {
    CHECK_FALSE(device.name.empty());
    for (const RdmaPort& port : device.ports) CHECK(port.number >= 0);
  }
}

TEST_CASE("error counters: errors, drops and discards, not traffic or congestion", "[rdma]") {
  for (const char* name : {"symbol_error",
                           "link_error_recovery",
                           "link_downed",
                           "port_rcv_errors",
                           "port_rcv_remote_physical_errors",
                           "port_rcv_switch_relay_errors",
                           "port_xmit_discards",
                           "port_xmit_constraint_errors",
                           "port_rcv_constraint_errors",
                           "local_link_integrity_errors",
                           "excessive_buffer_overrun_errors",
                           "VL15_dropped",
                           "out_of_buffer",
                           "out_of_sequence",
                           "packet_seq_err",
                           "rnr_nak_retry_err",
                           "local_ack_timeout_err",
                           "duplicate_request",
                           "req_cqe_error",
                           "PktDrop"})
    CHECK(isRdmaErrorCounter(name));
  for (const char* name : {"port_xmit_data", "port_rcv_packets", "port_xmit_wait",
                           "unicast_rcv_packets", "np_cnp_sent", "rp_cnp_handled", "lifespan"})
    CHECK_FALSE(isRdmaErrorCounter(name));
}

// A scratch sysfs root, removed at the end.
class Tree {
 public:
  Tree() {
    char pattern[] = "/tmp/tutti-sysfs-XXXXXX";
    REQUIRE(mkdtemp(pattern) != nullptr);
    root_ = pattern;
  }
  ~Tree() { fs::remove_all(root_); }
  const fs::path& root() const { return root_; }
  void write(const std::string& path, const std::string& text) {
    fs::create_directories((root_ / path).parent_path());
    std::ofstream(root_ / path) << text;
  }
  // A device directly under class/infiniband (no PCI function, as rxe), its port 1's files.
  fs::path port(const std::string& device) {
    return fs::path("class/infiniband") / device / "ports" / "1";
  }

 private:
  fs::path root_;
};

TEST_CASE("a sysfs root that is not a directory is an error naming it", "[rdma]") {
  try {
    readRdmaDevices("/nonexistent/tutti-sysfs");
    FAIL("no error");
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::kInvalidArgument);
    CHECK_THAT(error.what(), Catch::Contains("'/nonexistent/tutti-sysfs' is not a directory"));
  }
  Tree tree;
  tree.write("file", "x");
  CHECK_THROWS_WITH(readRdmaDevices((tree.root() / "file").string()),
                    Catch::Contains("is not a directory"));
  // A root without class/infiniband: no RDMA device, no error.
  CHECK(readRdmaDevices(tree.root().string()).empty());
}

TEST_CASE("missing files leave fields unknown; a virtual device has no PCI place", "[rdma]") {
  Tree tree;
  tree.write((tree.port("rxe0") / "state").string(), "4: ACTIVE\n");
  tree.write("class/infiniband/rxe0/ports/2/link_layer", "Ethernet\n");
  const std::vector<RdmaDevice> devices = readRdmaDevices(tree.root().string());
  REQUIRE(devices.size() == 1);
  const RdmaDevice& rxe = devices[0];
  CHECK(rxe.busId.empty());
  CHECK(rxe.pciPath.empty());
  CHECK(rxe.numaNode == -1);
  CHECK(rxe.nodeGuid.empty());
  CHECK(rxe.skipped.empty());
  REQUIRE(rxe.ports.size() == 2);
  CHECK(rxe.ports[0].active());
  CHECK(rxe.ports[0].rate.empty());
  CHECK(rxe.ports[0].mbps == 0);
  CHECK(rxe.ports[0].linkLayer.empty());
  CHECK(rxe.ports[1].state == 0);
  CHECK(rxe.ports[1].linkLayer == "Ethernet");
}

TEST_CASE("garbage in sysfs files is skipped with a note naming the file; a FIFO does not block",
          "[rdma]") {
  Tree tree;
  const fs::path port = tree.port("mlx5_9");
  tree.write("class/infiniband/mlx5_9/node_guid", "not-a-guid\n");
  tree.write((port / "state").string(), "ACTIVE\n");
  tree.write((port / "phys_state").string(), "99999: LinkUp\n");
  tree.write((port / "rate").string(), "fast\n");
  tree.write((port / "gids/0").string(), "fe80::1\n");
  tree.write((port / "gid_attrs/types/0").string(), "RoCE v3\n");
  tree.write((port / "counters/symbol_error").string(), "-1\n");
  tree.write((port / "counters/link_downed").string(), "99999999999999999999999\n");
  tree.write((port / "counters/port_rcv_errors").string(), "");
  tree.write((port / "counters/port_xmit_discards").string(), std::string("1\0002", 3));
  tree.write((port / "counters/VL15_dropped").string(), "7\n");
  fs::create_directories(tree.root() / port / "hw_counters" / "a_directory");
  REQUIRE(mkfifo((tree.root() / port / "hw_counters" / "a_fifo").c_str(), 0600) == 0);
  tree.write("class/infiniband/mlx5_9/ports/x/state", "4: ACTIVE\n");
  const std::vector<RdmaDevice> devices = readRdmaDevices(tree.root().string());
  REQUIRE(devices.size() == 1);
  const RdmaDevice& device = devices[0];
  CHECK(device.nodeGuid.empty());
  REQUIRE(device.ports.size() == 1);
  const RdmaPort& read = device.ports[0];
  CHECK(read.state == 0);
  CHECK(read.physState == 0);
  CHECK(read.rate.empty());
  CHECK(read.gid0.empty());
  CHECK(read.gid0Type.empty());
  // The one good counter is kept.
  CHECK(listed(read.counters) == Names{"VL15_dropped=7"});
  const Names expected = {
      "node_guid: 'not-a-guid' is not a GUID",
      "ports/1/state: 'ACTIVE' is not '<number>: <state>'",
      "ports/1/phys_state: '99999: LinkUp' is not '<number>: <state>'",
      "ports/1/rate: 'fast' is not '<number> Gb/sec (...)'",
      "ports/1/gids/0: 'fe80::1' is not a GID",
      "ports/1/gid_attrs/types/0: 'RoCE v3' is not 'IB/RoCE v1' or 'RoCE v2'",
      "ports/1/counters/link_downed: '99999999999999999999999' is not a count",
      "ports/1/counters/port_rcv_errors: empty",
      "ports/1/counters/port_xmit_discards: not text",
      "ports/1/counters/symbol_error: '-1' is not a count",
      "ports/1/hw_counters/a_directory: Is a directory",
      "ports/1/hw_counters/a_fifo: empty",
      "ports/x: not a port number",
  };
  CHECK(device.skipped == expected);
}

TEST_CASE("a file that cannot be read is skipped with errno's text", "[rdma]") {
  if (geteuid() == 0) {
    SUCCEED("root reads any file: the unreadable case needs another user");
    return;
  }
  Tree tree;
  tree.write((tree.port("mlx5_0") / "state").string(), "4: ACTIVE\n");
  chmod((tree.root() / tree.port("mlx5_0") / "state").c_str(), 0);
  const std::vector<RdmaDevice> devices = readRdmaDevices(tree.root().string());
  REQUIRE(devices.size() == 1);
  CHECK(devices[0].ports.at(0).state == 0);
  CHECK(devices[0].skipped == Names{"ports/1/state: Permission denied"});
}

TEST_CASE("a device link outside the root or dangling is noted, the device still read", "[rdma]") {
  Tree tree;
  tree.write((tree.port("mlx5_0") / "state").string(), "4: ACTIVE\n");
  fs::create_symlink("/", tree.root() / "class/infiniband/mlx5_0/device");
  tree.write((tree.port("mlx5_1") / "state").string(), "1: DOWN\n");
  fs::create_symlink("../../nowhere", tree.root() / "class/infiniband/mlx5_1/device");
  const std::vector<RdmaDevice> devices = readRdmaDevices(tree.root().string());
  REQUIRE(devices.size() == 2);
  CHECK(devices[0].busId.empty());
  CHECK(devices[0].ports.at(0).active());
  REQUIRE(devices[0].skipped.size() == 1);
  CHECK_THAT(devices[0].skipped[0], Catch::StartsWith("device: links outside "));
  CHECK(devices[1].skipped == Names{"device: link does not resolve"});
  CHECK(devices[1].ports.at(0).state == 1);
}

TEST_CASE("a device on another bus than PCI has a path but no bus id", "[rdma]") {
  Tree tree;
  tree.write("devices/platform/virtio0/numa_node", "0\n");
  tree.write((tree.port("rxe0") / "state").string(), "4: ACTIVE\n");
  fs::create_symlink("../../../devices/platform/virtio0",
                     tree.root() / "class/infiniband/rxe0/device");
  const std::vector<RdmaDevice> devices = readRdmaDevices(tree.root().string());
  REQUIRE(devices.size() == 1);
  CHECK(devices[0].busId.empty());
  CHECK(devices[0].pciPath == "platform/virtio0");
  CHECK(devices[0].numaNode == 0);
  CHECK(devices[0].skipped.empty());
}

}  // namespace
}  // namespace tutti::topology::test
