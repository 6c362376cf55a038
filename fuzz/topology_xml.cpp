// The NCCL topology XML importer (topology/xml_import.cpp) on any bytes: it must load the file or
// refuse it with kInvalidArgument, never crash or hang. What it loads must survive a round trip
// through the exporter: the XML written back imports again to the same graph (every node's kind,
// bus id, host, parent and PCI class; every link's ends, kind, count and bandwidth), and exporting
// that gives the same XML again.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_support.hpp"
#include "topology/topology.hpp"

namespace {

using tutti::topology::Topology;

// The first difference between two graphs, empty when there is none.
std::string difference(const Topology& a, const Topology& b) {
  if (a.hosts() != b.hosts()) return "hosts differ";
  if (a.nodes().size() != b.nodes().size() || a.links().size() != b.links().size())
    return fmt::format("{} nodes and {} links, then {} and {}", a.nodes().size(), a.links().size(),
                       b.nodes().size(), b.links().size());
  for (size_t i = 0; i < a.nodes().size(); ++i) {
    const auto &x = a.nodes()[i], &y = b.nodes()[i];
    if (x.kind != y.kind || x.busId != y.busId || x.host != y.host || x.parent != y.parent ||
        x.pciClass != y.pciClass)
      return fmt::format(
          "node {}: {} {} on host {} under {} (class 0x{:06x}), then {} {} on host "
          "{} under {} (class 0x{:06x})",
          i, nodeKindName(x.kind), x.busId, x.host, x.parent, x.pciClass, nodeKindName(y.kind),
          y.busId, y.host, y.parent, y.pciClass);
  }
  for (size_t i = 0; i < a.links().size(); ++i) {
    const auto &x = a.links()[i], &y = b.links()[i];
    if (x.from != y.from || x.to != y.to || x.kind != y.kind || x.count != y.count ||
        std::abs(x.bw - y.bw) > 1e-9 * std::max(std::abs(x.bw), 1.0))
      return fmt::format("link {}: {} -> {} {} x{} {} GB/s, then {} -> {} {} x{} {} GB/s", i,
                         x.from, x.to, linkKindName(x.kind), x.count, x.bw, y.from, y.to,
                         linkKindName(y.kind), y.count, y.bw);
  }
  return "";
}

}  // namespace

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
  if (std::string differs = difference(topo, again); !differs.empty())
    fuzz::bug("the exported XML imports to another graph (" + differs + "):\n" + written);
  if (topology::toXml(again) != written)
    fuzz::bug("exporting the imported export gives other XML:\n" + written + "\nthen\n" +
              topology::toXml(again));
  return 0;
}
