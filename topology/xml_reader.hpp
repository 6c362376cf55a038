// Checked reading of one XML document: UTF-8 validation, line numbers from pugixml offsets, and
// attributes read with bounds. Every failure is an Error naming the file, the line, the element
// and what was wrong.
#pragma once

#include <cstdint>
#include <optional>
#include <pugixml.hpp>
#include <string>
#include <string_view>

namespace tutti::topology {

class XmlReader {
 public:
  // Parses the text; throws on invalid UTF-8 or malformed XML.
  XmlReader(std::string_view text, std::string name);

  const pugi::xml_document& document() const { return doc_; }
  const std::string& name() const { return name_; }
  int line(const pugi::xml_node& node) const;

  [[noreturn]] void fail(const pugi::xml_node& node, const std::string& what) const;
  void warn(const pugi::xml_node& node, const std::string& what) const;

  // Missing attribute: empty / nullopt. Too long or out of range: an error.
  std::string text(const pugi::xml_node& node, const char* attr) const;
  std::optional<int64_t> integer(const pugi::xml_node& node, const char* attr, int64_t min,
                                 int64_t max) const;
  // "0x..." (a bare hex string is accepted too).
  std::optional<uint64_t> hex(const pugi::xml_node& node, const char* attr, uint64_t max) const;
  std::optional<double> real(const pugi::xml_node& node, const char* attr, double min,
                             double max) const;

 private:
  int lineAt(size_t offset) const;

  std::string text_;
  std::string name_;
  pugi::xml_document doc_;
};

}  // namespace tutti::topology
