// Topology files by kind: NCCL's XML or hwloc's, told apart by their root element, and the
// export chosen by the file name (JSON or NCCL XML).
#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <fstream>

#include "base/error.hpp"
#include "topology/topology.hpp"

namespace tutti::topology {
namespace {

// The name of the first element, past the declaration, comments and DOCTYPE; empty if none in
// the first few kilobytes.
std::string rootElement(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throwSystemError(fmt::format("topology file {}: cannot open", path), errno);
  std::string head(4096, '\0');
  file.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(file.gcount()));
  for (size_t at = head.find('<'); at != std::string::npos; at = head.find('<', at + 1)) {
    size_t end = at + 1;
    while (end < head.size() && (std::isalnum(static_cast<unsigned char>(head[end])) ||
                                 head[end] == '_' || head[end] == '-'))
      ++end;
    if (end > at + 1 && std::isalpha(static_cast<unsigned char>(head[at + 1])))
      return head.substr(at + 1, end - at - 1);
  }
  return "";
}

}  // namespace

Topology loadTopologyFile(const std::string& path) {
  return rootElement(path) == "topology" ? loadHwlocXmlFile(path) : loadXmlFile(path);
}

void saveTopologyFile(const Topology& topo, const std::string& path) {
  if (!path.ends_with(".json")) return saveXmlFile(topo, path);
  std::ofstream out(path);
  out << toJson(topo);
  if (!out.flush()) throwSystemError(fmt::format("topology file {}: cannot write", path), errno);
}

}  // namespace tutti::topology
