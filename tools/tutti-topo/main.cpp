// tutti-topo: probes this machine (or loads a topology file: NCCL's or hwloc's XML, or the JSON
// that --json writes) and prints it as a tree, the path matrix between GPUs and NICs, and the ring
// and tree channels the search finds, for its hosts or N copies of one (--hosts), and the cost
// model's all-reduce figures for them (--predict); exports it as
// NCCL XML (which tutti and NCCL read back), JSON (which tutti reads back) or an SVG drawing;
// --time reports how long the probe and the search took; --nics shows this machine's RDMA NICs
// (from sysfs, TUTTI_SYSFS_ROOT), a line per port of which ends the default output of a probe.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>

#include "base/config.hpp"
#include "base/error.hpp"
#include "nics.hpp"
#include "print.hpp"
#include "svg.hpp"

namespace {

void writeFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out.flush()) tutti::throwSystemError("tutti-topo: cannot write " + path, errno);
}

// Milliseconds since the previous lap (or construction).
class Stopwatch {
 public:
  double lap() {
    auto now = std::chrono::steady_clock::now();
    double ms = std::chrono::duration<double, std::milli>(now - last_).count();
    last_ = now;
    return ms;
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tutti-topo: topology of a machine, its paths, rings and trees"};
  std::string file;
  std::string xmlOut, jsonOut, svgOut;
  bool tree = false, matrix = false, rings = false, trees = false, timing = false, nics = false,
       predict = false;
  int hosts = 0;
  // An empty path would read as the option not given: --file '' probed this machine instead.
  const CLI::Validator aPath(
      [](std::string& path) { return path.empty() ? std::string("an empty path") : std::string(); },
      "PATH");
  app.add_option("--file", file,
                 "topology file to load instead of probing this machine: NCCL XML, hwloc XML "
                 "(lstopo --of xml) or tutti's JSON (--json), told apart by their content")
      ->check(aPath);
  app.add_flag("--tree", tree, "print the tree (the default when nothing else is asked)");
  app.add_flag("--matrix", matrix, "print GPU x GPU and GPU x NIC path types and bandwidths");
  app.add_flag("--rings", rings, "print the ring channels of each host, then across hosts");
  app.add_flag("--trees", trees, "print the double binary tree across hosts");
  app.add_flag("--predict", predict,
               "print the cost model's all-reduce busbw by size (as nccl-tests reports it) for "
               "each algorithm the plan has, one rank per GPU");
  app.add_option("--hosts", hosts, "plan for N copies of the (first) host")
      ->check(CLI::Range(1, 4096));
  app.add_option("--xml", xmlOut, "write the topology as NCCL XML to this file")->check(aPath);
  app.add_option("--json", jsonOut, "write the topology as JSON to this file (- for stdout)")
      ->check(aPath);
  app.add_option("--svg", svgOut, "draw the topology and its rings as SVG to this file")
      ->check(aPath);
  app.add_flag("--time", timing, "print how long the probe (or load), paths and search took");
  app.add_flag("--nics", nics,
               "print this machine's RDMA NICs from sysfs (TUTTI_SYSFS_ROOT): ports, state, rate, "
               "link layer, GID, error counters, and the ports TUTTI_IB_HCA leaves in use");
  CLI11_PARSE(app, argc, argv);
  try {
    Stopwatch watch;
    tutti::topology::Topology topo =
        file.empty() ? tutti::topology::probeHost() : tutti::topology::loadTopologyFile(file);
    double loadMs = watch.lap(), pathsMs = 0;
    if (hosts > 0) {
      topo = tutti::topology::replicateHosts(topo, hosts);
      pathsMs = watch.lap();
    }
    if (timing) {
      tutti::topology::searchNetRings(topo);
      tutti::topology::searchTrees(topo);
      std::string copies =
          hosts > 0 ? fmt::format(", {} hosts' paths {:.1f} ms", hosts, pathsMs) : "";
      fmt::print("time: {} {:.1f} ms{}, search (rings, trees) {:.1f} ms\n",
                 file.empty() ? "probe" : "load", loadMs, copies, watch.lap());
    }
    bool quiet = matrix || rings || trees || predict || timing || nics || !xmlOut.empty() ||
                 !jsonOut.empty() || !svgOut.empty();
    // Read before anything is printed, so that a bad TUTTI_SYSFS_ROOT or TUTTI_IB_HCA fails alone.
    const bool nicLines = !quiet && file.empty();
    tutti::tools::NicReport report;
    if (nics || nicLines) {
      report.root = tutti::topology::sysfsRoot();
      report.devices = tutti::topology::probeRdmaDevices();
      report.colour = isatty(STDOUT_FILENO) != 0;
    }
    const tutti::topology::HcaSelector selector =
        nics ? tutti::topology::hcaSelectorFromEnv() : tutti::topology::HcaSelector{};
    if (tree || !quiet) fmt::print("{}", tutti::tools::formatTree(topo));
    if (nicLines) fmt::print("{}", tutti::tools::formatNicPorts(report));
    if (nics)
      fmt::print("{}", tutti::tools::formatNics(report, selector,
                                                tutti::config::getString("TUTTI_IB_HCA")));
    if (matrix) fmt::print("{}", tutti::tools::formatMatrix(topo));
    if (rings) fmt::print("{}", tutti::tools::formatRings(topo));
    if (trees) fmt::print("{}", tutti::tools::formatTrees(topo));
    if (predict) fmt::print("{}", tutti::tools::formatPrediction(topo));
    if (!xmlOut.empty()) tutti::topology::saveXmlFile(topo, xmlOut);
    if (jsonOut == "-") fmt::print("{}", tutti::topology::toJson(topo));
    if (!jsonOut.empty() && jsonOut != "-") writeFile(jsonOut, tutti::topology::toJson(topo));
    if (!svgOut.empty()) writeFile(svgOut, tutti::tools::toSvg(topo));
  } catch (const tutti::Error& error) {
    fmt::print(stderr, "tutti-topo: {}\n", error.what());
    return 1;
  }
  return 0;
}
