#include "tools/tutti-validate/heatmap.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "base/xml_text.hpp"

namespace tutti::validate {
namespace {

constexpr double kCell = 56, kLabel = 120, kTop = 60;

// Red below the threshold; from yellow at it to green at the median and above.
std::string colourOf(double fraction, double threshold) {
  if (fraction < threshold) return "#d73027";
  const double t = std::clamp((fraction - threshold) / std::max(1e-9, 1 - threshold), 0.0, 1.0);
  const int red = static_cast<int>(254 - t * (254 - 26)),
            green = static_cast<int>(224 - t * (224 - 152));
  return fmt::format("#{:02x}{:02x}{:02x}", red, green, 80);
}

}  // namespace

std::string heatmapSvg(const Report& report) {
  const size_t n = report.hosts.size();
  std::vector<std::vector<std::optional<double>>> gbs(n, std::vector<std::optional<double>>(n));
  for (const PairResult& p : report.pairs) {
    gbs[static_cast<size_t>(p.a)][static_cast<size_t>(p.b)] = p.gbsAtoB;
    gbs[static_cast<size_t>(p.b)][static_cast<size_t>(p.a)] = p.gbsBtoA;
  }
  const double width = kLabel + kCell * static_cast<double>(n) + 20;
  const double height = kTop + kLabel + kCell * static_cast<double>(n);
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n"
      "<text x=\"10\" y=\"20\" font-size=\"14\">GB/s from row to column; median {:.3g}, red below "
      "{:.0f}% of it</text>\n",
      width, height, report.verdict.medianGBs, 100 * report.thresholds.minBandwidthFraction);
  for (size_t i = 0; i < n; ++i) {
    const std::string name = escapeXml(report.hosts[i]);
    const double at = kTop + kLabel + kCell * static_cast<double>(i);
    svg += fmt::format("<text x=\"{:.0f}\" y=\"{:.0f}\" text-anchor=\"end\">{}</text>\n",
                       kLabel - 6, at + kCell / 2 + 4, name);
    svg +=
        fmt::format("<text transform=\"translate({:.0f},{:.0f}) rotate(-60)\">{}</text>\n",
                    kLabel + kCell * static_cast<double>(i) + kCell / 2, kTop + kLabel - 6, name);
  }
  for (size_t row = 0; row < n; ++row)
    for (size_t col = 0; col < n; ++col) {
      const double x = kLabel + kCell * static_cast<double>(col);
      const double y = kTop + kLabel + kCell * static_cast<double>(row);
      const auto& value = gbs[row][col];
      const std::string fill =
          value && report.verdict.medianGBs > 0
              ? colourOf(*value / report.verdict.medianGBs, report.thresholds.minBandwidthFraction)
              : "#dddddd";
      svg += fmt::format(
          "<rect x=\"{:.0f}\" y=\"{:.0f}\" width=\"{:.0f}\" height=\"{:.0f}\" fill=\"{}\" "
          "stroke=\"white\"/>\n",
          x, y, kCell, kCell, fill);
      if (value)
        svg += fmt::format("<text x=\"{:.0f}\" y=\"{:.0f}\" text-anchor=\"middle\">{:.3g}</text>\n",
                           x + kCell / 2, y + kCell / 2 + 4, *value);
    }
  return svg + "</svg>\n";
}

}  // namespace tutti::validate
