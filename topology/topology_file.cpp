// Topology files by kind: tutti's JSON, NCCL's XML or hwloc's, told apart by their content (JSON
// starts with '{', an XML file's root element names its format), and the export chosen by the
// file name (JSON or NCCL XML).
#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <fstream>

#include "base/error.hpp"
#include "topology/import_common.hpp"
#include "topology/topology.hpp"

namespace tutti::topology {
namespace {

enum class Format { kJson, kNcclXml, kHwlocXml };

// The name of the first element, past the declaration, comments and DOCTYPE; empty if none.
std::string rootElement(const std::string& head) {
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

// From the first few kilobytes: JSON when the first byte past a byte-order mark and white space
// opens an object (or an array, which the JSON import then refuses by name); else the root
// element's format.
Format formatOf(std::string_view text) {
  const std::string head(text.substr(0, 4096));
  size_t first = head.starts_with("\xef\xbb\xbf") ? 3 : 0;
  first = head.find_first_not_of(" \t\r\n", first);
  if (first != std::string::npos && (head[first] == '{' || head[first] == '['))
    return Format::kJson;
  return rootElement(head) == "topology" ? Format::kHwlocXml : Format::kNcclXml;
}

}  // namespace

// Read once, then told apart and parsed from memory: the file may be a pipe.
Topology loadTopologyFile(const std::string& path) {
  const std::string text = readTopologyText(path);
  switch (formatOf(text)) {
    case Format::kJson: return parseJson(text, path);
    case Format::kHwlocXml: return parseHwlocXml(text, path);
    case Format::kNcclXml: break;
  }
  return parseXml(text, path);
}

void saveTopologyFile(const Topology& topo, const std::string& path) {
  if (!path.ends_with(".json")) return saveXmlFile(topo, path);
  std::ofstream out(path);
  out << toJson(topo);
  if (!out.flush()) throwSystemError(fmt::format("topology file {}: cannot write", path), errno);
}

}  // namespace tutti::topology
