#include "svg.hpp"

#include <fmt/format.h>

#include <cmath>
#include <numbers>
#include <vector>

namespace tutti::tools {
namespace {

using topology::NodeKind;
using topology::Topology;

constexpr double kHostWidth = 360, kHostHeight = 420, kRadius = 120, kLegendLine = 18;
constexpr const char* kColours[] = {"#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4",
                                    "#42d4f4", "#f032e6", "#9a6324", "#800000", "#469990",
                                    "#000075", "#808000", "#bfef45", "#fabed4", "#dcbeff"};

struct Point {
  double x = 0, y = 0;
};

// Where each GPU and NIC is drawn: GPUs on a circle in their host's box, NICs in a row below.
std::vector<Point> layout(const Topology& topo) {
  std::vector<Point> at(topo.nodes().size());
  for (int host = 0; host < static_cast<int>(topo.hosts().size()); ++host) {
    double left = host * kHostWidth, centre = left + kHostWidth / 2;
    std::vector<int> gpus = topo.nodesOf(NodeKind::kGpu, host);
    for (size_t i = 0; i < gpus.size(); ++i) {
      double angle =
          2 * std::numbers::pi * static_cast<double>(i) / static_cast<double>(gpus.size());
      at[gpus[i]] = {centre + kRadius * std::sin(angle), 170 - kRadius * std::cos(angle)};
    }
    std::vector<int> nics = topo.nodesOf(NodeKind::kNic, host);
    for (size_t i = 0; i < nics.size(); ++i)
      at[nics[i]] = {
          left + kHostWidth * (static_cast<double>(i) + 0.5) / static_cast<double>(nics.size()),
          350};
  }
  return at;
}

std::string line(Point a, Point b, const std::string& style) {
  return fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" {}/>\n", a.x,
                     a.y, b.x, b.y, style);
}

std::string box(Point p, const std::string& label, const char* fill) {
  return fmt::format(
      "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"44\" height=\"24\" rx=\"4\" fill=\"{}\" "
      "stroke=\"black\"/>\n<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
      p.x - 22, p.y - 12, fill, p.x, p.y + 5, label);
}

// The hops of one channel, each shifted sideways by `offset` so that channels stay apart.
std::string channelLines(const Topology& topo, const std::vector<Point>& at,
                         const topology::Channel& channel, double offset, const char* colour) {
  std::string style = fmt::format("stroke=\"{}\" stroke-width=\"2\" fill=\"none\"", colour);
  auto shifted = [&](int node) { return Point{at[node].x + offset, at[node].y + offset}; };
  std::string out;
  size_t n = channel.ring.size();
  for (size_t i = 0; i < n && n > 1; ++i) {
    int from = channel.ring[i], to = channel.ring[(i + 1) % n];
    int fromHost = topo.node(from).host, toHost = topo.node(to).host;
    if (fromHost == toHost) {
      out += line(shifted(from), shifted(to), style);
      continue;
    }
    int exitNic = topo.nodesOf(NodeKind::kNic, fromHost).at(static_cast<size_t>(channel.exitRail));
    int entryNic = topo.nodesOf(NodeKind::kNic, toHost).at(static_cast<size_t>(channel.rail));
    out += line(shifted(from), shifted(exitNic), style);
    // Between hosts: down from the NIC, along below the hosts, up into the other NIC.
    Point exit = shifted(exitNic), entry = shifted(entryNic);
    out += fmt::format("<path d=\"M {:.1f} {:.1f} V {:.1f} H {:.1f} V {:.1f}\" {} {}/>\n", exit.x,
                       exit.y, kHostHeight - 10 + offset, entry.x, entry.y, style,
                       "stroke-dasharray=\"6 3\"");
    out += line(shifted(entryNic), shifted(to), style);
  }
  return out;
}

}  // namespace

std::string toSvg(const Topology& topo) {
  std::vector<Point> at = layout(topo);
  topology::RingPlan plan = topology::searchNetRings(topo);
  double width = kHostWidth * static_cast<double>(topo.hosts().size());
  double height = kHostHeight + 20 + kLegendLine * static_cast<double>(plan.channels.size());
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
      "fill=\"white\"/>\n",
      width, height);
  for (size_t host = 0; host < topo.hosts().size(); ++host)
    out += fmt::format(
        "<rect x=\"{:.1f}\" y=\"10\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"none\" "
        "stroke=\"#888\"/>\n<text x=\"{:.1f}\" y=\"28\">host {}</text>\n",
        static_cast<double>(host) * kHostWidth + 5, kHostWidth - 10, kHostHeight - 30,
        static_cast<double>(host) * kHostWidth + 12, host);
  for (const topology::Link& link : topo.links())
    if (link.kind == topology::LinkKind::kNvLink && link.from < link.to &&
        topo.node(link.from).kind == NodeKind::kGpu && topo.node(link.to).kind == NodeKind::kGpu)
      out += line(at[link.from], at[link.to],
                  fmt::format("stroke=\"#ccc\" stroke-width=\"{}\"", 2 * link.count));
  size_t colours = std::size(kColours);
  for (size_t c = 0; c < plan.channels.size(); ++c) {
    double offset = (static_cast<double>(c) - static_cast<double>(plan.channels.size()) / 2) * 3;
    out += channelLines(topo, at, plan.channels[c], offset, kColours[c % colours]);
  }
  for (int gpu : topo.nodesOf(NodeKind::kGpu))
    out += box(at[gpu], fmt::format("GPU{}", topo.node(gpu).index), "#dfd");
  for (int nic : topo.nodesOf(NodeKind::kNic))
    out += box(at[nic], fmt::format("NIC{}", topo.node(nic).index), "#ddf");
  for (size_t c = 0; c < plan.channels.size(); ++c)
    out +=
        fmt::format("<text x=\"12\" y=\"{:.1f}\" fill=\"{}\">{}</text>\n",
                    kHostHeight + 20 + kLegendLine * static_cast<double>(c), kColours[c % colours],
                    topology::formatChannel(topo, static_cast<int>(c), plan.channels[c]));
  return out + "</svg>\n";
}

}  // namespace tutti::tools
