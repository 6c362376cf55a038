#include "bench/plot.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <map>
#include <stdexcept>
#include <vector>

#include "base/xml_text.hpp"

namespace tutti::bench {
namespace {

constexpr double kWidth = 860, kHeight = 520;
constexpr double kLeft = 80, kRight = 200, kTop = 50, kBottom = 70;  // margins
constexpr std::array<const char*, 8> kColors = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                                "#9467bd", "#8c564b", "#e377c2", "#17becf"};

std::string sizeLabel(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (bytes >= 1024 && u < 3) bytes /= 1024, ++u;
  return fmt::format("{:g} {}", bytes, units[u]);
}

// The series' name: the algorithm, plus type, op and root when the run has several.
std::map<std::string, std::vector<const ResultRow*>> series(const Results& r) {
  std::map<std::string, std::vector<const ResultRow*>> out;
  for (const auto& row : r.rows) {
    std::string name = row.algorithm + " " + row.type + (row.op == "none" ? "" : " " + row.op) +
                       (row.root < 0 ? "" : " root " + std::to_string(row.root));
    if (row.bytes > 0) out[name].push_back(&row);
  }
  return out;
}

}  // namespace

std::string plotSvg(const Results& r, const std::string& title) {
  double minBytes = 1e300, maxBytes = 1, maxBw = 0;
  for (const auto& row : r.rows) {
    if (row.bytes == 0) continue;
    minBytes = std::min(minBytes, static_cast<double>(row.bytes));
    maxBytes = std::max(maxBytes, static_cast<double>(row.bytes));
    maxBw = std::max(maxBw, row.outOfPlace.bandwidth.busbw);
  }
  if (minBytes > maxBytes) minBytes = maxBytes;
  const double lo = std::floor(std::log2(minBytes)),
               hi = std::max(lo + 1, std::ceil(std::log2(maxBytes)));
  const double top = maxBw > 0 ? maxBw * 1.1 : 1;
  const double plotW = kWidth - kLeft - kRight, plotH = kHeight - kTop - kBottom;
  auto x = [&](double bytes) { return kLeft + (std::log2(bytes) - lo) / (hi - lo) * plotW; };
  auto y = [&](double bw) { return kTop + plotH - bw / top * plotH; };

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
      "fill=\"white\"/>\n<text x=\"{}\" y=\"28\" font-size=\"16\" "
      "text-anchor=\"middle\">{}</text>\n",
      kWidth, kHeight, kLeft + plotW / 2, escapeXml(title));
  // Axes, grid and labels: a tick per power of two, or per power of four when crowded.
  const int step = hi - lo > 12 ? 2 : 1;
  const int first = (static_cast<int>(lo) + step - 1) / step * step;
  for (int e = first; e <= static_cast<int>(hi); e += step) {
    double px = x(std::ldexp(1.0, e));
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#ddd\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
        px, kTop, kTop + plotH, kTop + plotH + 18, sizeLabel(std::ldexp(1.0, e)));
  }
  for (int i = 0; i <= 5; ++i) {
    double bw = top * i / 5, py = y(bw);
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5:.3g}</text>\n",
        kLeft, py, kLeft + plotW, kLeft - 6, py + 4, bw);
  }
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"black\"/>\n"
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">message size (bytes, log scale)</text>\n"
      "<text transform=\"translate(20 {}) rotate(-90)\" text-anchor=\"middle\">bus bandwidth "
      "(GB/s, out-of-place)</text>\n",
      kLeft, kTop, plotW, plotH, kLeft + plotW / 2, kHeight - 20, kTop + plotH / 2);
  // One polyline per series, with its legend entry.
  size_t index = 0;
  for (const auto& [name, rows] : series(r)) {
    const char* color = kColors[index % kColors.size()];
    std::string points;
    for (const ResultRow* row : rows) {
      points += fmt::format("{:.1f},{:.1f} ", x(static_cast<double>(row->bytes)),
                            y(row->outOfPlace.bandwidth.busbw));
    }
    double ly = kTop + 10 + 20.0 * static_cast<double>(index);
    svg += fmt::format(
        "<polyline fill=\"none\" stroke=\"{0}\" stroke-width=\"2\" points=\"{1}\"/>\n"
        "<line x1=\"{2}\" y1=\"{3}\" x2=\"{4}\" y2=\"{3}\" stroke=\"{0}\" stroke-width=\"2\"/>"
        "<text x=\"{5}\" y=\"{6}\">{7}</text>\n",
        color, points, kLeft + plotW + 12, ly, kLeft + plotW + 36, kLeft + plotW + 42, ly + 4,
        escapeXml(name));
    ++index;
  }
  return svg + "</svg>\n";
}

void writePlot(const std::string& path, const Results& results, const std::string& title) {
  std::ofstream out(path);
  out << plotSvg(results, title);
  if (!out) throw std::runtime_error(fmt::format("cannot write {}", path));
}

}  // namespace tutti::bench
