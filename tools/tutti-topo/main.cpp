// tutti-topo: probes this machine (or loads a topology file, NCCL's XML) and prints it as a tree,
// the path matrix between GPUs and NICs, and the ring channels the search finds; exports it as NCCL
// XML (which tutti and NCCL read back) or JSON.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <fstream>

#include "base/error.hpp"
#include "json.hpp"
#include "print.hpp"

int main(int argc, char** argv) {
  CLI::App app{"tutti-topo: topology of a machine, its paths and its ring channels"};
  std::string file;
  std::string xmlOut, jsonOut;
  bool tree = false, matrix = false, rings = false;
  app.add_option("--file", file, "NCCL topology XML to load instead of probing this machine");
  app.add_flag("--tree", tree, "print the tree (the default when nothing else is asked)");
  app.add_flag("--matrix", matrix, "print GPU x GPU and GPU x NIC path types and bandwidths");
  app.add_flag("--rings", rings, "print the ring channels of each host");
  app.add_option("--xml", xmlOut, "write the topology as NCCL XML to this file");
  app.add_option("--json", jsonOut, "write the topology as JSON to this file (- for stdout)");
  CLI11_PARSE(app, argc, argv);
  try {
    tutti::topology::Topology topo =
        file.empty() ? tutti::topology::probeHost() : tutti::topology::loadXmlFile(file);
    bool exporting = !xmlOut.empty() || !jsonOut.empty();
    if (tree || (!matrix && !rings && !exporting)) fmt::print("{}", tutti::tools::formatTree(topo));
    if (matrix) fmt::print("{}", tutti::tools::formatMatrix(topo));
    if (rings) fmt::print("{}", tutti::tools::formatRings(topo));
    if (!xmlOut.empty()) tutti::topology::saveXmlFile(topo, xmlOut);
    if (jsonOut == "-") fmt::print("{}", tutti::tools::toJson(topo));
    if (!jsonOut.empty() && jsonOut != "-") {
      std::ofstream out(jsonOut);
      out << tutti::tools::toJson(topo);
      if (!out.flush()) tutti::throwSystemError("tutti-topo: cannot write " + jsonOut, errno);
    }
  } catch (const tutti::Error& error) {
    fmt::print(stderr, "tutti-topo: {}\n", error.what());
    return 1;
  }
  return 0;
}
