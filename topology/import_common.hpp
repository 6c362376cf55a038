// What the importers of topology files (NCCL XML, tutti's JSON) share: the bounds on the graph
// they build (every pair of a host's nodes gets a path, so the graph's size bounds the time and
// memory the paths take), the reading of a file with its size bound, and the form of their errors
// and warnings: "topology file NAME: WHERE: WHAT", WHERE a line and element (XML) or a JSON path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "topology/topology.hpp"

namespace tutti::topology {

constexpr size_t kMaxFileBytes = 64 << 20;
constexpr size_t kMaxNodes = 2048;        // in a file
constexpr size_t kMaxNodesPerKind = 256;  // per host, as NCCL_TOPO_MAX_NODES
constexpr size_t kMaxCpusPerHost = 64;    // all linked to each other: paths cost their cube
constexpr int kMaxPciDepth = 32;          // PCI devices nested under a CPU
constexpr int kMaxLinksPerGpu = 64;       // NVLink or C2C lanes; an H100 has 18 NVLinks
constexpr size_t kMaxTextBytes = 256;     // a name, bus id, GUID, vendor...

// Why `node` may not join `topo` (empty when it may): a bus id its host already has, the name
// "nvswitch" on another node than the host's NVSwitch, more than kMaxNodes nodes, or more than
// kMaxCpusPerHost CPUs or kMaxNodesPerKind nodes of another kind on its host.
std::string nodeProblem(const Topology& topo, const Node& node);

// A hex number ("0x..." or bare digits) up to `max`; nullopt when malformed or larger.
std::optional<uint64_t> parseHex(std::string_view text, uint64_t max);

// The whole file, read once without seeking (it may be a pipe): kSystem when it cannot be opened
// or read, kInvalidArgument over kMaxFileBytes.
std::string readTopologyText(const std::string& path);

// kInvalidArgument "topology file NAME: WHERE: WHAT".
[[noreturn]] void failTopologyFile(std::string_view name, std::string_view where,
                                   std::string_view what);
// The same at WARN: what an importer ignores.
void warnTopologyFile(std::string_view name, std::string_view where, std::string_view what);

}  // namespace tutti::topology
