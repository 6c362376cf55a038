// The oracle of the topology import targets (topology_xml, topology_json): two graphs, the one
// imported and the one its export imports to, must be the same.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>

#include "fuzz/fuzz_support.hpp"
#include "topology/topology.hpp"

namespace tutti::fuzz {

// The first difference between two graphs (each node's kind, bus id, host, parent and PCI class;
// each link's ends, kind, count and bandwidth), empty when there is none.
inline std::string graphDifference(const topology::Topology& a, const topology::Topology& b) {
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
          i, topology::nodeKindName(x.kind), x.busId, x.host, x.parent, x.pciClass,
          topology::nodeKindName(y.kind), y.busId, y.host, y.parent, y.pciClass);
  }
  for (size_t i = 0; i < a.links().size(); ++i) {
    const auto &x = a.links()[i], &y = b.links()[i];
    if (x.from != y.from || x.to != y.to || x.kind != y.kind || x.count != y.count ||
        std::abs(x.bw - y.bw) > 1e-9 * std::max(std::abs(x.bw), 1.0))
      return fmt::format("link {}: {} -> {} {} x{} {} GB/s, then {} -> {} {} x{} {} GB/s", i,
                         x.from, x.to, topology::linkKindName(x.kind), x.count, x.bw, y.from, y.to,
                         topology::linkKindName(y.kind), y.count, y.bw);
  }
  return "";
}

// The target's body for one import format: `text` must load or be refused with kInvalidArgument;
// what loads must survive the round trip through `write`: the written text imports again to the
// same graph, and writing that gives the same text. Returns the graph when `text` loaded.
template <typename Parse, typename Write>
std::optional<topology::Topology> checkRoundTrip(std::string_view text, const char* format,
                                                 Parse parse, Write write) {
  topology::Topology topo;
  if (!accepts(ErrorCode::kInvalidArgument, [&] { topo = parse(text, "fuzz input"); }))
    return std::nullopt;
  const std::string written = write(topo);
  topology::Topology again;
  if (!accepts(ErrorCode::kInvalidArgument, [&] { again = parse(written, "exported"); }))
    bug(fmt::format("the exporter wrote {} that the importer refuses:\n{}", format, written));
  if (std::string differs = graphDifference(topo, again); !differs.empty())
    bug(fmt::format("the exported {} imports to another graph ({}):\n{}", format, differs,
                    written));
  if (const std::string rewritten = write(again); rewritten != written)
    bug(fmt::format("exporting the imported export gives other {}:\n{}\nthen\n{}", format, written,
                    rewritten));
  return topo;
}

}  // namespace tutti::fuzz
