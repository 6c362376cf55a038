// Bad input is an Error naming the file, the line and what was wrong; never a crash.
#include "base/error.hpp"
#include "helpers.hpp"

namespace tutti::topology::test {
namespace {

// The message of the Error that parsing `text` throws (fails the test when none is thrown).
std::string errorOf(const std::string& text) {
  try {
    parseXml(text, "bad.xml");
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::kInvalidArgument);
    return error.what();
  }
  FAIL("no error for: " << text.substr(0, 200));
  return "";
}

const std::string kGpu =
    "<system version=\"1\">\n<cpu numaid=\"0\">\n"
    "<pci busid=\"0000:01:00.0\" class=\"0x030200\" link_speed=\"16 GT/s\" link_width=\"16\"/>\n"
    "</cpu>\n</system>\n";

TEST_CASE("a well-formed minimal file loads") {
  CHECK(parseXml(kGpu, "ok.xml").nodesOf(NodeKind::kGpu).size() == 1);
}

TEST_CASE("truncated XML names the file and the line") {
  std::string message = errorOf(kGpu.substr(0, kGpu.size() - 20));
  CHECK_THAT(message, Catch::Contains("bad.xml") && Catch::Contains("line") &&
                          Catch::Contains("malformed XML"));
}

TEST_CASE("empty input and a wrong root element") {
  CHECK_THAT(errorOf(""), Catch::Contains("bad.xml") && Catch::Contains("No document element"));
  CHECK_THAT(errorOf("<topology/>"), Catch::Contains("<system>"));
}

TEST_CASE("a wrong version is refused") {
  CHECK_THAT(errorOf("<system version=\"7\"/>"), Catch::Contains("unsupported version 7"));
}

TEST_CASE("out-of-range and malformed numbers") {
  std::string wide = kGpu;
  wide.replace(wide.find("link_width=\"16\""), 15, "link_width=\"999\"");
  CHECK_THAT(errorOf(wide), Catch::Contains("line 3") && Catch::Contains("link_width"));
  CHECK_THAT(errorOf("<system><cpu numaid=\"99999999999999999999999\"/></system>"),
             Catch::Contains("numaid"));
  CHECK_THAT(errorOf("<system><cpu><nic><net speed=\"1e400\"/></nic></cpu></system>"),
             Catch::Contains("speed"));
  CHECK_THAT(errorOf("<system><cpu><pci busid=\"0:1\" class=\"0xzz\"/></cpu></system>"),
             Catch::Contains("class"));
}

TEST_CASE("huge attribute values are refused") {
  std::string text = "<system><cpu vendor=\"" + std::string(100000, 'x') + "\"/></system>";
  CHECK_THAT(errorOf(text), Catch::Contains("vendor") && Catch::Contains("bytes long"));
}

TEST_CASE("non-UTF-8 bytes are refused with their line") {
  std::string text = "<system>\n<cpu vendor=\"\xff\xfe\"/>\n</system>";
  CHECK_THAT(errorOf(text), Catch::Contains("line 2") && Catch::Contains("UTF-8"));
}

TEST_CASE("deep nesting (10^5 levels) is an error, not a stack overflow") {
  std::string text = "<system><cpu>";
  for (int i = 0; i < 100000; ++i) text += "<pci busid=\"0000:00:00." + std::to_string(i) + "\">";
  for (int i = 0; i < 100000; ++i) text += "</pci>";
  text += "</cpu></system>";
  CHECK_THAT(errorOf(text), Catch::Contains("nested deeper"));
}

TEST_CASE("duplicate bus ids are refused") {
  std::string text =
      "<system><cpu><pci busid=\"0000:01:00.0\" class=\"0x030200\"/>"
      "<pci busid=\"0000:01:00.0\" class=\"0x030200\"/></cpu></system>";
  CHECK_THAT(errorOf(text), Catch::Contains("duplicate"));
}

TEST_CASE("unknown elements are ignored with a warning") {
  Warnings warnings;
  warnings.expect();
  std::string text = kGpu;
  text.insert(text.find("<cpu"), "<gadget size=\"3\"/>\n");
  CHECK(parseXml(text, "odd.xml").nodesOf(NodeKind::kGpu).size() == 1);
  REQUIRE(warnings.all().size() == 1);
  CHECK_THAT(warnings.all()[0],
             Catch::Contains("odd.xml") && Catch::Contains("line 2") && Catch::Contains("gadget"));
}

TEST_CASE("a missing file is a system error naming it") {
  try {
    loadXmlFile("/nonexistent/topo.xml");
    FAIL("no error");
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::kSystem);
    CHECK_THAT(error.what(), Catch::Contains("/nonexistent/topo.xml"));
  }
}

TEST_CASE("graphs too big to compute paths for quickly are refused (found by fuzz/topology_xml)") {
  std::string cpus = "<system>";
  for (int i = 0; i < 65; ++i) cpus += "<cpu numaid=\"" + std::to_string(i) + "\"/>";
  CHECK_THAT(errorOf(cpus + "</system>"), Catch::Contains("more than 64 nodes of this kind"));
  std::string gpus = "<system><cpu>";
  for (int i = 0; i < 257; ++i)
    gpus += "<pci busid=\"" + std::to_string(i) + "\" class=\"0x030200\"/>";
  CHECK_THAT(errorOf(gpus + "</cpu></system>"),
             Catch::Contains("more than 256 nodes of this kind"));
  std::string hosts = "<system>";
  for (int i = 0; i < 2049; ++i) hosts += "<cpu host_hash=\"" + std::to_string(i) + "\"/>";
  CHECK_THAT(errorOf(hosts + "</system>"), Catch::Contains("more than 2048 nodes in the file"));
}

TEST_CASE("NVLink counts that add up past 64 are refused (found by fuzz/topology_xml)") {
  std::string text = "<system><cpu><pci busid=\"0000:01:00.0\" class=\"0x030200\"><gpu sm=\"90\">";
  for (const char* nvswitch : {"0000:c0:00.0", "0000:c1:00.0"})
    text += std::string("<nvlink target=\"") + nvswitch + "\" count=\"40\" tclass=\"0x068000\"/>";
  CHECK_THAT(errorOf(text + "</gpu></pci></cpu></system>"),
             Catch::Contains("more than 64 links of this kind from one GPU"));
}

TEST_CASE("a device or port named nvswitch is refused (found by fuzz/topology_xml)") {
  // The host's one NVSwitch node is named nvswitch, and the export writes NVLinks to it with that
  // target: a GPU of that name took them, as GPU-to-GPU NVLinks, when the export was read back.
  const std::string gpu =
      "<system><cpu numaid=\"0\"><pci busid=\"NVSwitch\" class=\"0x030200\"/>"
      "<pci busid=\"0000:01:00.0\" class=\"0x030200\"><gpu sm=\"90\">"
      "<nvlink target=\"0000:c0:00.0\" count=\"18\" tclass=\"0x068000\"/></gpu></pci>"
      "</cpu></system>";
  CHECK_THAT(errorOf(gpu), Catch::Contains("line 1") && Catch::Contains("nvswitch"));
  const std::string port =
      "<system><cpu numaid=\"0\"><pci busid=\"0000:02:00.0\" class=\"0x020700\">"
      "<nic><net name=\"nvswitch\" speed=\"400000\"/></nic></pci></cpu></system>";
  CHECK_THAT(errorOf(port), Catch::Contains("the name nvswitch is the NVSwitch node's"));
}

}  // namespace
}  // namespace tutti::topology::test
