#include "topology/xml_reader.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "base/error.hpp"
#include "topology/import_common.hpp"

namespace tutti::topology {
namespace {

// Offset of the first byte that is not well-formed UTF-8, or npos.
size_t invalidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xe  ? 3
                 : (c >> 3) == 0x1e ? 4
                                    : 0;
    if (len == 0 || (len == 2 && c < 0xc2) || i + len > s.size()) return i;
    for (size_t k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return i;
    i += len;
  }
  return std::string_view::npos;
}

std::string describe(const pugi::xml_node& node) {
  std::string out = "<" + std::string(node.name());
  if (auto busid = node.attribute("busid")) out += std::string(" busid=\"") + busid.value() + "\"";
  return out + ">";
}

}  // namespace

XmlReader::XmlReader(std::string_view text, std::string name)
    : text_(text), name_(std::move(name)) {
  if (size_t bad = invalidUtf8(text_); bad != std::string_view::npos)
    raise(ErrorCode::kInvalidArgument, "topology file {}: line {}: invalid UTF-8 byte 0x{:02x}",
          name_, lineAt(bad), static_cast<unsigned char>(text_[bad]));
  pugi::xml_parse_result result =
      doc_.load_buffer(text_.data(), text_.size(), pugi::parse_default, pugi::encoding_utf8);
  if (!result)
    raise(ErrorCode::kInvalidArgument, "topology file {}: line {}: malformed XML: {}", name_,
          lineAt(static_cast<size_t>(std::max<ptrdiff_t>(result.offset, 0))), result.description());
}

int XmlReader::lineAt(size_t offset) const {
  offset = std::min(offset, text_.size());
  return 1 + static_cast<int>(std::count(text_.begin(), text_.begin() + offset, '\n'));
}

int XmlReader::line(const pugi::xml_node& node) const {
  ptrdiff_t offset = node.offset_debug();
  return offset < 0 ? 0 : lineAt(static_cast<size_t>(offset));
}

void XmlReader::fail(const pugi::xml_node& node, const std::string& what) const {
  failTopologyFile(name_, fmt::format("line {}: {}", line(node), describe(node)), what);
}

void XmlReader::warn(const pugi::xml_node& node, const std::string& what) const {
  warnTopologyFile(name_, fmt::format("line {}: {}", line(node), describe(node)), what);
}

std::string XmlReader::text(const pugi::xml_node& node, const char* attr) const {
  std::string_view value = node.attribute(attr).value();
  if (value.size() > kMaxTextBytes)
    fail(node, fmt::format("attribute {} is {} bytes long (at most {})", attr, value.size(),
                           kMaxTextBytes));
  return std::string(value);
}

std::optional<int64_t> XmlReader::integer(const pugi::xml_node& node, const char* attr, int64_t min,
                                          int64_t max) const {
  std::string value = text(node, attr);
  if (value.empty()) return std::nullopt;
  int64_t out = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
  if (ec != std::errc() || end != value.data() + value.size() || out < min || out > max)
    fail(node,
         fmt::format("attribute {}=\"{}\": expected an integer in {}..{}", attr, value, min, max));
  return out;
}

std::optional<uint64_t> XmlReader::hex(const pugi::xml_node& node, const char* attr,
                                       uint64_t max) const {
  std::string value = text(node, attr);
  if (value.empty()) return std::nullopt;
  std::optional<uint64_t> out = parseHex(value, max);
  if (!out)
    fail(node,
         fmt::format("attribute {}=\"{}\": expected a hex number up to 0x{:x}", attr, value, max));
  return out;
}

std::optional<double> XmlReader::real(const pugi::xml_node& node, const char* attr, double min,
                                      double max) const {
  std::string value = text(node, attr);
  if (value.empty()) return std::nullopt;
  double out = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
  if (ec != std::errc() || end != value.data() + value.size() || !std::isfinite(out) || out < min ||
      out > max)
    fail(node,
         fmt::format("attribute {}=\"{}\": expected a number in {}..{}", attr, value, min, max));
  return out;
}

}  // namespace tutti::topology
