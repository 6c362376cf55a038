// --plot's SVG: one line per series with its legend entry, a log-scale size axis, labels.
#include <catch2/catch.hpp>
#include <string>

#include "bench/plot.hpp"

using namespace tutti::bench;

namespace {

size_t occurrences(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("the plot has a line per algorithm and readable axes", "[bench][plot]") {
  Results r;
  for (const char* algorithm : {"ring", "tree"}) {
    for (size_t bytes = 8; bytes <= (1u << 20); bytes *= 4) {
      ResultRow row{"allreduce", algorithm, bytes, bytes / 4, "float", "sum", -1, {}, {}};
      row.outOfPlace.bandwidth.busbw = static_cast<double>(bytes) / 1e5;
      r.rows.push_back(row);
    }
  }
  std::string svg = plotSvg(r, "busbw <2 ranks>");
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  CHECK(svg.find("</svg>") != std::string::npos);
  CHECK(occurrences(svg, "<polyline") == 2);
  CHECK(svg.find(">ring float sum<") != std::string::npos);
  CHECK(svg.find(">tree float sum<") != std::string::npos);
  CHECK(svg.find("busbw &lt;2 ranks&gt;") != std::string::npos);  // escaped
  CHECK(svg.find(">16 B<") != std::string::npos);  // 8 B .. 512 KiB: a tick per power of four
  CHECK(svg.find(">1 KiB<") != std::string::npos);
  CHECK(svg.find(">256 KiB<") != std::string::npos);
  CHECK(svg.find("log scale") != std::string::npos);
  CHECK(svg.find("bus bandwidth (GB/s") != std::string::npos);
  CHECK(plotSvg(Results{}, "empty").find("</svg>") != std::string::npos);
}
