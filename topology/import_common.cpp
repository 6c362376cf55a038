#include "topology/import_common.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <vector>

#include "base/error.hpp"
#include "base/log.hpp"

namespace tutti::topology {

std::string nodeProblem(const Topology& topo, const Node& node) {
  if (topo.findBusId(node.host, node.busId) >= 0)
    return fmt::format("duplicate {} on host {}", node.busId, node.host);
  // The host's one NVSwitch node is named so (the export's NVLink target).
  if (node.busId == "nvswitch" && node.kind != NodeKind::kNvSwitch)
    return "the name nvswitch is the NVSwitch node's";
  // Bounds on the graph bound the time and memory its paths take (every pair of a host's nodes
  // has one).
  if (topo.nodes().size() >= kMaxNodes)
    return fmt::format("more than {} nodes in the file", kMaxNodes);
  const size_t limit = node.kind == NodeKind::kCpu ? kMaxCpusPerHost : kMaxNodesPerKind;
  if (topo.nodesOf(node.kind, node.host).size() >= limit)
    return fmt::format("more than {} nodes of this kind on host {}", limit, node.host);
  return "";
}

std::optional<uint64_t> parseHex(std::string_view text, uint64_t max) {
  if (text.starts_with("0x") || text.starts_with("0X")) text.remove_prefix(2);
  uint64_t out = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out, 16);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || out > max)
    return std::nullopt;
  return out;
}

std::string readTopologyText(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throwSystemError(fmt::format("topology file {}: cannot open", path), errno);
  const auto tooLarge = [&] {
    raise(ErrorCode::kInvalidArgument, "topology file {}: more than {} bytes", path, kMaxFileBytes);
  };
  // A regular file too large is refused unread. A pipe (--file <(...), /dev/stdin) has no size
  // and cannot seek: it is read to its end, and refused once past the bound.
  std::error_code noSize;
  if (const uintmax_t size = std::filesystem::file_size(path, noSize);
      !noSize && size > kMaxFileBytes)
    tooLarge();
  std::string text;
  std::vector<char> chunk(64 << 10);
  while (file.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || file.gcount() > 0) {
    text.append(chunk.data(), static_cast<size_t>(file.gcount()));
    if (text.size() > kMaxFileBytes) tooLarge();
  }
  if (file.bad()) throwSystemError(fmt::format("topology file {}: cannot read", path), errno);
  return text;
}

void failTopologyFile(std::string_view name, std::string_view where, std::string_view what) {
  raise(ErrorCode::kInvalidArgument, "topology file {}: {}: {}", name, where, what);
}

void warnTopologyFile(std::string_view name, std::string_view where, std::string_view what) {
  log::warn("topology file {}: {}: {}", name, where, what);
}

}  // namespace tutti::topology
