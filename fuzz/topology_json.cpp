// The JSON topology importer (topology/json_import.cpp) on any bytes: it must load the file or
// refuse it with kInvalidArgument, never crash or hang. What it loads must survive a round trip
// through the exporter: the JSON written back imports again to the same graph (every node's kind,
// bus id, host, parent and PCI class; every link's ends, kind, count and bandwidth), and exporting
// that gives the same JSON again (which holds every other field too). The NCCL XML export of what
// it loads must not crash either.
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
  if (auto topo = fuzz::checkRoundTrip(text, "JSON", topology::parseJson, topology::toJson))
    (void)topology::toXml(*topo);
  return 0;
}
