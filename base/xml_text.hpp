// Text placed in XML or SVG, escaped: host names, labels and titles come from outside. Inline, so
// that programs on the public API alone (tutti-bench) use it without linking the base layer.
#pragma once

#include <string>
#include <string_view>

namespace tutti {

inline std::string escapeXml(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace tutti
