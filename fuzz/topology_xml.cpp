// The NCCL topology XML importer (topology/xml_import.cpp) on any bytes: it must load the file or
// refuse it with kInvalidArgument, never crash or hang. What it loads must survive a round trip
// through the exporter: the XML written back imports again to the same graph (every node's kind,
// bus id, host, parent and PCI class; every link's ends, kind, count and bandwidth), and exporting
// that gives the same XML again.
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_support.hpp"
#include "fuzz/topology_oracle.hpp"
#include "topology/topology.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tutti::fuzz::discardLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tutti;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  fuzz::checkRoundTrip(text, "XML", topology::parseXml, topology::toXml);
  return 0;
}
