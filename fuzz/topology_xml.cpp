// The NCCL topology XML importer (topology/xml_import.cpp) on any bytes: it must load the file or
// refuse it with kInvalidArgument, never crash or hang. What it loads must survive a round trip
// through the exporter: the XML written back imports again, to as many nodes and links.
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_support.hpp"
#include "topology/topology.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tutti::fuzz::discardLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tutti;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  topology::Topology topo;
  if (!fuzz::accepts(ErrorCode::kInvalidArgument,
                     [&] { topo = topology::parseXml(text, "fuzz.xml"); }))
    return 0;
  const std::string written = topology::toXml(topo);
  topology::Topology again;
  if (!fuzz::accepts(ErrorCode::kInvalidArgument,
                     [&] { again = topology::parseXml(written, "exported.xml"); }))
    fuzz::bug("the exporter wrote XML that the importer refuses:\n" + written);
  if (again.nodes().size() != topo.nodes().size() || again.links().size() != topo.links().size())
    fuzz::bug("the exported XML imports to another graph:\n" + written);
  return 0;
}
