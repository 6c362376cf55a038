// JSON import: what toJson writes reads back to the same graph and writes the same JSON again
// (every fixture, the fuzz corpus, copies of hosts, this machine's probe); bad input is an Error
// naming the file and a JSON path (or a line and column), one row of the table per check of the
// importer.
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "helpers.hpp"

namespace tutti::topology::test {
namespace {

using nlohmann::json;

// Every field of every node (checkSameGraph compares the graph's shape), the hardware threads
// and the notes.
void checkSameFields(const Topology& a, const Topology& b) {
  REQUIRE(a.nodes().size() == b.nodes().size());
  for (size_t i = 0; i < a.nodes().size(); ++i) {
    const Node &x = a.nodes()[i], &y = b.nodes()[i];
    INFO(x.busId);
    CHECK(x.package == y.package);
    CHECK(x.arch == y.arch);
    CHECK(x.vendor == y.vendor);
    CHECK(x.family == y.family);
    CHECK(x.model == y.model);
    CHECK(x.dev == y.dev);
    CHECK(x.rank == y.rank);
    CHECK(x.name == y.name);
    CHECK(x.port == y.port);
    CHECK(x.linkLayer == y.linkLayer);
    CHECK(x.inferred == y.inferred);
  }
  REQUIRE(a.pus.size() == b.pus.size());
  for (size_t i = 0; i < a.pus.size(); ++i) {
    CHECK(a.pus[i].os == b.pus[i].os);
    CHECK(a.pus[i].core == b.pus[i].core);
    CHECK(a.pus[i].package == b.pus[i].package);
    CHECK(a.pus[i].cpu == b.pus[i].cpu);
  }
  CHECK(a.notes == b.notes);
}

// Export, import, export: the same graph and the same JSON.
void checkRoundTrip(const Topology& original, const std::string& name) {
  const std::string text = toJson(original);
  Topology again = parseJson(text, name + ".json");
  checkSameGraph(original, again);
  checkSameFields(original, again);
  CHECK(toJson(again) == text);
}

TEST_CASE("JSON export then import gives the same graph and the same JSON, for every fixture") {
  const std::vector<std::string> files = fixtureFiles();
  REQUIRE(files.size() >= 20);
  for (const std::string& file : files) {
    INFO(file);
    Topology original = loadFixture(file);
    checkRoundTrip(original, std::filesystem::path(file).stem().string());
    // The NCCL XML export sees the same graph too.
    if (original.pus.empty())
      CHECK(toXml(parseJson(toJson(original), "again.json")) == toXml(original));
  }
}

// The oracle of fuzz/topology_json on its corpus (the seeds and the inputs that found bugs):
// what loads survives the round trip, what does not is refused with kInvalidArgument.
TEST_CASE("every input of fuzz/corpus/topology_json that loads survives the round trip") {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(TUTTI_FUZZ_JSON_CORPUS))
    files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 4);
  int loaded = 0;
  for (const auto& file : files) {
    INFO(file.filename().string());
    Warnings warnings;
    warnings.expect();
    Topology original;
    try {
      original = loadJsonFile(file.string());
    } catch (const Error& error) {
      CHECK(error.code() == ErrorCode::kInvalidArgument);
      continue;
    }
    ++loaded;
    checkRoundTrip(original, file.stem().string());
  }
  CHECK(loaded >= 4);
}

TEST_CASE("JSON round trip of copies of a host and of this machine's probe") {
  checkRoundTrip(replicateHosts(load("dgx1-v100.xml"), 3), "dgx1-v100 x3");
  checkRoundTrip(probeHost(), "probe");
  checkRoundTrip(probeHost(ProbeScope::kCpus), "probe of the CPUs");
}

TEST_CASE("topology files starting with { are JSON, whatever their name") {
  const std::string path = "test_topology_json_import.topo";
  Topology original = load("oci-bm-gpu-h100.xml");
  {
    std::ofstream file(path);
    file << "\n  \t" << toJson(original);
  }
  Topology again = loadTopologyFile(path);
  checkSameGraph(original, again);
  saveTopologyFile(again, path + ".json");
  CHECK(toJson(loadTopologyFile(path + ".json")) == toJson(original));
  std::filesystem::remove(path);
  std::filesystem::remove(path + ".json");
}

TEST_CASE("a JSON file over 64 MiB is refused before it is read") {
  const std::string path = "test_topology_json_huge.json";
  {
    std::ofstream file(path);
    file << "{";
  }
  std::filesystem::resize_file(path, (64 << 20) + 1);  // sparse: nothing written
  try {
    loadTopologyFile(path);
    FAIL("no error");
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::kInvalidArgument);
    CHECK_THAT(error.what(), Catch::Contains(path) && Catch::Contains("more than 67108864"));
  }
  std::filesystem::remove(path);
}

// The message of the Error that parsing `text` throws (fails the test when none is thrown).
std::string errorOf(const std::string& text) {
  try {
    parseJson(text, "bad.json");
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::kInvalidArgument);
    return error.what();
  }
  FAIL("no error for: " << text.substr(0, 300));
  return "";
}

TEST_CASE("malformed JSON names the file, the line and the column") {
  struct Row {
    const char* what;
    std::string text;
    std::vector<std::string> expected;
  };
  const std::string nested = "{\"notes\": " + std::string(100000, '[') + std::string(100000, ']');
  const std::vector<Row> rows = {
      {"empty", "", {"bad.json: line 1, column 1: malformed JSON", "unexpected end of input"}},
      {"truncated", "{\n  \"hosts\": [\"\"],\n  \"nodes\": [\n", {"line 4, column 1"}},
      {"garbage", "{\"hosts\": x}", {"line 1, column 11", "invalid literal"}},
      {"trailing", "{} {}", {"malformed JSON", "expected end of input"}},
      {"comment", "{/* no */}", {"malformed JSON"}},
      {"invalid UTF-8", "{\"hosts\": [\"\xff\"]}", {"malformed JSON", "UTF-8"}},
      {"number overflow",
       "{\"hosts\": [], \"nodes\": [], \"links\": [1e400]}",
       {"line 1, column", "number overflow parsing '1e400'"}},
      {"nested deeper than 16 (10^5 levels)",
       nested,
       {"bad.json: notes[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]: nested deeper than 16"}},
      {"a key twice",
       "{\"hosts\": [\"\"], \"nodes\": [{\"id\": 0, \"id\": 0}]}",
       {"nodes[0].id: the key appears twice in its object"}},
      {"a key twice at the top level",
       "{\"hosts\": [], \"hosts\": []}",
       {"bad.json: hosts: the key appears twice in its object"}},
      {"not an object", "[]", {"bad.json: top level: expected an object, got an array of 0"}},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    std::string message = errorOf(row.text);
    for (const std::string& part : row.expected) CHECK_THAT(message, Catch::Contains(part));
  }
}

json exported(const std::string& fixtureName) {
  return json::parse(toJson(loadTopologyFile(fixture(fixtureName))));
}

// A file in one of the fixtures' JSON with an edit, and what its error must say.
struct BadEdit {
  const char* what;
  const char* fixture;
  std::function<void(json&)> edit;
  std::vector<std::string> expected;
};

json cpuNode(int id, int host) {
  return {{"id", id},
          {"kind", "CPU"},
          {"busId", fmt::format("numa{}", id)},
          {"host", host},
          {"parent", -1}};
}
json gpuNode(int id, int parent, const std::string& busId) {
  return {{"id", id},         {"kind", "GPU"},        {"busId", busId}, {"host", 0},
          {"parent", parent}, {"pciClass", 0x030200}, {"pciGts", 16.0}, {"pciWidth", 16}};
}
json link(int from, int to, const char* kind, double bw = 24, int count = 1) {
  return {{"from", from}, {"to", to}, {"kind", kind}, {"bw", bw}, {"count", count}};
}

// Node ids in pcie-2switch: 0 CPU, 1 switch, 2 and 3 GPUs, 4 NIC, 5 its port, 6 switch, 7 and 8
// GPUs. In dgx1-v100: 0 CPU, 1 switch, 2 and 3 GPUs, 4 NIC, 5 port, ..., 11 the second CPU.
// fused-2host: host 0 is nodes 0-3 (CPU, GPU, NIC, port), host 1 nodes 4-7.
const std::vector<BadEdit>& badEdits() {
  static const std::vector<BadEdit> rows = {
      {"nodes missing",
       "pcie-2switch.xml",
       [](json& j) { j.erase("nodes"); },
       {"bad.json: nodes: missing"}},
      {"links not an array",
       "pcie-2switch.xml",
       [](json& j) { j["links"] = 3; },
       {"links: expected an array, got 3"}},
      {"a note not a string",
       "pcie-2switch.xml",
       [](json& j) { j["notes"] = {1}; },
       {"notes[0]: expected a string, got 1"}},
      {"a host twice",
       "pcie-2switch.xml",
       [](json& j) {
         j["hosts"] = {"a", "b", "a"};
       },
       {"hosts[2]: the same as hosts[0]"}},
      {"a node not an object",
       "pcie-2switch.xml",
       [](json& j) { j["nodes"][3] = "GPU"; },
       {"nodes[3]: expected an object, got \"GPU\""}},
      {"an unknown node kind",
       "pcie-2switch.xml",
       [](json& j) { j["nodes"][3]["kind"] = "TPU"; },
       {"nodes[3].kind: unknown node kind \"TPU\""}},
      {"ids out of order",
       "pcie-2switch.xml",
       [](json& j) { j["nodes"][3]["id"] = 4; },
       {"nodes[3].id: 4, but nodes are listed in id order: expected 3"}},
      {"a host out of range",
       "pcie-2switch.xml",
       [](json& j) { j["nodes"][2]["host"] = 1; },
       {"nodes[2].host: expected an integer in 0..0, got 1"}},
      {"a parent listed after the node",
       "pcie-2switch.xml",
       [](json& j) { j["nodes"][2]["parent"] = 6; },
       {"nodes[2].parent: expected an integer in -1..1, got 6"}},
      {"a GPU under a NIC",
       "pcie-2switch.xml",
       [](json& j) { j["nodes"][7]["parent"] = 4; },
       {"nodes[7].parent: a GPU node sits under a CPU or a PCI switch, not under nodes[4] (NIC)"}},
      {"a CPU with a parent",
       "dgx1-v100.xml",
       [](json& j) { j["nodes"][11]["parent"] = 0; },
       {"nodes[11].parent: a CPU node has none (-1)"}},
      {"a port without its NIC",
       "pcie-2switch.xml",
       [](json& j) { j["nodes"][5]["parent"] = -1; },
       {"nodes[5].parent: a NET node sits under its NIC"}},
      {"a parent on another host",
       "fused-2host.xml",
       [](json& j) { j["nodes"][5]["parent"] = 0; },
       {"nodes[5].parent: nodes[0] is on host 0, this node on host 1"}},
      {"a duplicate bus id",
       "pcie-2switch.xml",
       [](json& j) { j["nodes"][3]["busId"] = "0000:11:00.0"; },
       {"nodes[3]: duplicate 0000:11:00.0 on host 0"}},
      {"a GPU named nvswitch",
       "pcie-2switch.xml",
       [](json& j) { j["nodes"][3]["busId"] = "nvswitch"; },
       {"nodes[3]: the name nvswitch is the NVSwitch node's"}},
      {"an NVSwitch of another name",
       "oci-bm-gpu-h100.xml",
       [](json& j) {
         for (json& node : j["nodes"])
           if (node["kind"] == "NVS") node["busId"] = "0000:1a:00.0";
       },
       {".busId: the NVSwitch node (all of a host's NVSwitches) is named nvswitch"}},
      {"an empty bus id",
       "pcie-2switch.xml",
       [](json& j) { j["nodes"][3]["busId"] = ""; },
       {"nodes[3].busId: empty"}},
      {"a bus id of 300 bytes",
       "pcie-2switch.xml",
       [](json& j) { j["nodes"][3]["busId"] = std::string(300, 'x'); },
       {"nodes[3].busId: 300 bytes long (at most 256)"}},
      {"an index that is not the node's",
       "pcie-2switch.xml",
       [](json& j) { j["nodes"][3]["index"] = 0; },
       {"nodes[3].index: 0, but this is GPU 1 of host 0"}},
      {"a PCIe rate that is none",
       "pcie-2switch.xml",
       [](json& j) { j["nodes"][2]["pciGts"] = 7; },
       {"nodes[2].pciGts: 7 is not a PCIe rate"}},
      {"a PCIe width out of range",
       "pcie-2switch.xml",
       [](json& j) { j["nodes"][2]["pciWidth"] = 33; },
       {"nodes[2].pciWidth: expected an integer in 1..32, got 33"}},
      {"a GPU without a PCIe link",
       "pcie-2switch.xml",
       [](json& j) { j["nodes"][2].erase("pciWidth"); },
       {"nodes[2].pciWidth: missing"}},
      {"a NIC without a PCIe link under a switch",
       "pcie-2switch.xml",
       [](json& j) {
         for (const char* key : {"pciClass", "pciGts", "pciWidth"}) j["nodes"][4].erase(key);
       },
       {"nodes[4].pciWidth: missing: only a NIC directly under a CPU has no PCIe link"}},
      {"a PCI class out of range",
       "pcie-2switch.xml",
       [](json& j) { j["nodes"][2]["pciClass"] = 0x1000000; },
       {"nodes[2].pciClass: expected an integer in 0..16777215, got 16777216"}},
      {"an SM version that is text",
       "pcie-2switch.xml",
       [](json& j) { j["nodes"][2]["sm"] = "90"; },
       {"nodes[2].sm: expected an integer in 0..1000, got \"90\""}},
      {"an SM version that is a fraction",
       "pcie-2switch.xml",
       [](json& j) { j["nodes"][2]["sm"] = 9.5; },
       {"nodes[2].sm: expected an integer in 0..1000, got 9.5"}},
      {"a NUMA id of 2^64 - 1",
       "pcie-2switch.xml",
       [](json& j) { j["nodes"][0]["numaId"] = UINT64_MAX; },
       {"nodes[0].numaId: expected an integer in -1..65535, got 18446744073709551615"}},
      {"a GUID that is not hex",
       "pcie-2switch.xml",
       [](json& j) { j["nodes"][5]["guid"] = "0xzz"; },
       {"nodes[5].guid: \"0xzz\": expected a hex number"}},
      {"a port number out of range",
       "pcie-2switch.xml",
       [](json& j) { j["nodes"][5]["port"] = 5000; },
       {"nodes[5].port: expected an integer in 0..1024, got 5000"}},
      {"a link not an object",
       "pcie-2switch.xml",
       [](json& j) { j["links"][0] = json::array(); },
       {"links[0]: expected an object, got an array of 0"}},
      {"a dangling link end",
       "pcie-2switch.xml",
       [](json& j) { j["links"][3]["to"] = 9; },
       {"links[3].to: expected an integer in 0..8, got 9"}},
      {"a negative link end",
       "pcie-2switch.xml",
       [](json& j) { j["links"][3]["from"] = -1; },
       {"links[3].from: expected an integer in 0..8, got -1"}},
      {"an unknown link kind",
       "pcie-2switch.xml",
       [](json& j) { j["links"][3]["kind"] = "USB"; },
       {"links[3].kind: unknown link kind \"USB\""}},
      {"a negative bandwidth",
       "pcie-2switch.xml",
       [](json& j) { j["links"][3]["bw"] = -1; },
       {"links[3].bw: expected a number in 0..1000000, got -1"}},
      {"a bandwidth that is null",
       "pcie-2switch.xml",
       [](json& j) { j["links"][3]["bw"] = nullptr; },
       {"links[3].bw: expected a number in 0..1000000, got null"}},
      {"a link from a node to itself",
       "pcie-2switch.xml",
       [](json& j) { j["links"].push_back(link(2, 2, "NVLink")); },
       {"links[16]: a link from nodes[2] to itself"}},
      {"the same link twice",
       "pcie-2switch.xml",
       [](json& j) { j["links"].push_back(j["links"][2]); },
       {"links[16]: the same PCIe link from nodes[1] to nodes[2] as links[2]"}},
      {"a link between hosts",
       "fused-2host.xml",
       [](json& j) { j["links"].push_back(link(1, 5, "NVLink")); },
       {"nodes[1] is on host 0, nodes[5] on host 1: hosts meet only through their network"}},
      {"an NVLink to a NIC",
       "pcie-2switch.xml",
       [](json& j) { j["links"].push_back(link(2, 4, "NVLink")); },
       {"links[16]: an NVLink joins a GPU to a GPU, to its host's NVSwitch or to its own CPU "
        "(nodes[2] to nodes[4]: GPU to NIC)"}},
      {"an NVLink to another CPU",
       "dgx1-v100.xml",
       [](json& j) { j["links"].push_back(link(2, 11, "NVLink")); },
       {"an NVLink joins"}},
      {"an SMP link to a switch",
       "pcie-2switch.xml",
       [](json& j) { j["links"].push_back(link(0, 6, "SMP")); },
       {"an SMP link joins two CPUs"}},
      {"a NET link to another NIC's port",
       "dgx1-v100.xml",
       [](json& j) { j["links"].push_back(link(9, 5, "NET")); },
       {"a NET link joins a NIC and its own port"}},
      {"a PCIe link to a port",
       "pcie-2switch.xml",
       [](json& j) { j["links"].push_back(link(2, 5, "PCIe")); },
       {"a PCIe link joins a node to its parent, or two PCI devices"}},
      {"a C2C link to a switch",
       "pcie-2switch.xml",
       [](json& j) { j["links"].push_back(link(2, 1, "C2C")); },
       {"a C2C link joins a GPU and its own CPU"}},
      {"lanes bundled on a PCIe link",
       "pcie-2switch.xml",
       [](json& j) { j["links"][0]["count"] = 2; },
       {"links[0].count: 2: only NVLink and C2C links bundle lanes"}},
      {"NVLink lanes past 64 from one GPU",
       "pcie-2switch.xml",
       [](json& j) {
         j["links"].push_back(link(2, 3, "NVLink", 800, 40));
         j["links"].push_back(link(2, 7, "NVLink", 800, 40));
       },
       {"links[17]: more than 64 links of this kind from one GPU"}},
      {"a count of 0",
       "pcie-2switch.xml",
       [](json& j) { j["links"][0]["count"] = 0; },
       {"links[0].count: expected an integer in 1..64, got 0"}},
      {"a node without its link to its parent",
       "pcie-2switch.xml",
       [](json& j) { j["links"].erase(3); },
       {"nodes[2]: no PCIe link to and from its parent nodes[1]"}},
      {"a port without its NET link",
       "pcie-2switch.xml",
       [](json& j) { j["links"].erase(8); },
       {"nodes[5]: no NET link to and from its parent nodes[4]"}},
      {"hardware threads not an array",
       "hwloc-2socket-gpu.xml",
       [](json& j) { j["pus"] = "0-7"; },
       {"pus: expected an array, got \"0-7\""}},
      {"a hardware thread on a GPU",
       "hwloc-2socket-gpu.xml",
       [](json& j) { j["pus"][1]["cpu"] = 3; },
       {"pus[1].cpu: nodes[3] is not a CPU of host 0"}},
      {"a hardware thread twice",
       "hwloc-2socket-gpu.xml",
       [](json& j) { j["pus"][1]["os"] = 0; },
       {"pus[1].os: OS CPU 0 listed twice"}},
      {"a hardware thread without its CPU",
       "hwloc-2socket-gpu.xml",
       [](json& j) { j["pus"][1].erase("cpu"); },
       {"pus[1].cpu: missing"}},
      {"65 CPUs on a host",
       "pcie-2switch.xml",
       [](json& j) {
         j["nodes"] = json::array();
         j["links"] = json::array();
         for (int i = 0; i < 65; ++i) j["nodes"].push_back(cpuNode(i, 0));
       },
       {"nodes[64]: more than 64 nodes of this kind on host 0"}},
      {"257 GPUs on a host",
       "pcie-2switch.xml",
       [](json& j) {
         j["nodes"] = json::array({cpuNode(0, 0)});
         j["links"] = json::array();
         for (int i = 1; i <= 257; ++i) j["nodes"].push_back(gpuNode(i, 0, std::to_string(i)));
       },
       {"nodes[257]: more than 256 nodes of this kind on host 0"}},
      {"2049 nodes",
       "pcie-2switch.xml",
       [](json& j) {
         j["hosts"] = json::array();
         j["nodes"] = json::array();
         j["links"] = json::array();
         for (int host = 0; host < 33; ++host) {
           j["hosts"].push_back(std::to_string(host));
           for (int i = 0; i < 64; ++i)
             j["nodes"].push_back(cpuNode(static_cast<int>(j["nodes"].size()), host));
         }
       },
       {"nodes[2048]: more than 2048 nodes in the file"}},
      {"2049 hosts",
       "pcie-2switch.xml",
       [](json& j) {
         j["hosts"] = json::array();
         for (int host = 0; host < 2049; ++host) j["hosts"].push_back(std::to_string(host));
       },
       {"hosts: 2049 hosts, more than 2048"}},
      {"PCI switches nested 33 deep",
       "pcie-2switch.xml",
       [](json& j) {
         j["nodes"] = json::array({cpuNode(0, 0)});
         j["links"] = json::array();
         for (int i = 1; i <= 33; ++i) {
           json node = gpuNode(i, i - 1, std::to_string(i));
           node["kind"] = "PCI";
           j["nodes"].push_back(node);
         }
       },
       {"nodes[33].parent: nested deeper than 32"}},
  };
  return rows;
}

TEST_CASE("bad JSON content is refused with the path of what is wrong") {
  std::map<std::string, json> bases;
  for (const BadEdit& row : badEdits()) {
    INFO(row.what);
    auto [base, fresh] = bases.try_emplace(row.fixture);
    if (fresh) base->second = exported(row.fixture);
    json edited = base->second;
    row.edit(edited);
    std::string message = errorOf(edited.dump());
    for (const std::string& part : row.expected) CHECK_THAT(message, Catch::Contains(part));
  }
}

TEST_CASE("the edits of the bad-input table start from files that load") {
  // So that each row fails for its own edit, not for something else in its base.
  for (const char* name : {"pcie-2switch.xml", "dgx1-v100.xml", "fused-2host.xml",
                           "oci-bm-gpu-h100.xml", "hwloc-2socket-gpu.xml"}) {
    INFO(name);
    CHECK_NOTHROW(parseJson(exported(name).dump(), name));
  }
}

TEST_CASE("keys the JSON import does not read are ignored with a warning naming them") {
  Warnings warnings;
  warnings.expect();
  json j = exported("pcie-2switch.xml");
  j["comment"] = "hand-edited";
  j["odd\nkey"] = 1;
  j[std::string(1000, 'k')] = 1;
  j["nodes"][2]["numaId"] = 3;  // a CPU's field on a GPU
  j["links"][0]["latency"] = 1;
  Topology topo = parseJson(j.dump(), "odd.json");
  CHECK(topo.node(2).numaId == -1);
  REQUIRE(warnings.all().size() == 5);
  CHECK_THAT(warnings.all()[0], Catch::Contains("odd.json: comment: unknown key: ignored"));
  CHECK_THAT(warnings.all()[1],
             Catch::Contains("odd.json: [a key of 1000 bytes]: unknown key: ignored"));
  CHECK_THAT(warnings.all()[2], Catch::Contains("odd.json: [\"odd\\nkey\"]: unknown key: ignored"));
  CHECK_THAT(warnings.all()[3],
             Catch::Contains("odd.json: nodes[2].numaId: not a field of a GPU node: ignored"));
  CHECK_THAT(warnings.all()[4],
             Catch::Contains("odd.json: links[0].latency: not a field of a link: ignored"));
}

TEST_CASE("optional JSON fields take their defaults; rings are not read") {
  json j = exported("dgx1-v100.xml");
  j["rings"] = "anything";  // derived from the graph, computed again on export
  for (json& node : j["nodes"]) {
    node.erase("index");
    if (node.value("rank", 0) == -1) node.erase("rank");
  }
  for (json& link : j["links"])
    if (link["count"] == 1) link.erase("count");
  Topology topo = parseJson(j.dump(), "short.json");
  checkSameGraph(load("dgx1-v100.xml"), topo);
  CHECK(toJson(topo) == toJson(load("dgx1-v100.xml")));
}

}  // namespace
}  // namespace tutti::topology::test
