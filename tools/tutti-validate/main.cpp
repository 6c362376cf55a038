// tutti-validate: is this cluster's interconnect healthy, and if not, what exactly is wrong.
// One rank per host, started like any tutti program (tuttirun, mpirun, srun, torchrun). Exit
// status: 0 healthy, 1 degraded (the report names what), 2 the validation itself failed.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>

#include "tools/tutti-validate/heatmap.hpp"
#include "tools/tutti-validate/inventory.hpp"
#include "tools/tutti-validate/measure.hpp"
#include "tools/tutti-validate/report.hpp"

namespace {

using namespace tutti::validate;

constexpr int kHealthy = 0, kDegraded = 1, kFailed = 2;

struct Options {
  bool quick = false;
  Workload workload;
  Thresholds thresholds;
  std::string json;
  std::string svg;
  std::string name;
  std::string expect;  // a topology file every host should match
  bool allreduce = true;
};

// Opened before any measurement, so that a bad path is refused at once, not after minutes.
std::ofstream openReport(const std::string& path, const char* what) {
  std::ofstream file;
  if (path.empty()) return file;
  file.open(path);
  if (!file) throw std::runtime_error(fmt::format("cannot write {} to {}", what, path));
  return file;
}

void writeReport(std::ofstream& file, const std::string& text, const std::string& path) {
  if (!file.is_open()) return;
  file << text;
  if (!file.flush()) throw std::runtime_error("cannot write to " + path);
}

int validate(const Options& options) {
  std::ofstream json = openReport(options.json, "the JSON report");
  std::ofstream svg = openReport(options.svg, "the heatmap");
  std::optional<Inventory> expected;
  if (!options.expect.empty())
    expected = inventoryOf(tutti::topology::loadTopologyFile(options.expect), {});
  tutti::Comm comm = tutti::Comm::fromEnv();
  const bool speaks = comm.rank() == 0;
  auto progress = [&](const std::string& line) {
    if (speaks) std::cerr << "tutti-validate: " << line << std::endl;
  };
  Report report;
  report.mode = options.quick ? "quick" : "full";
  report.thresholds = options.thresholds;
  report.hosts = hostNames(comm, options.name);
  progress("inventory of every host");
  std::vector<Inventory> inventories;
  for (const std::string& text : gatherText(comm, encodeInventory(localInventory())))
    inventories.push_back(decodeInventory(text));
  const std::vector<Finding> inventoryFindings =
      compareInventories(inventories, expected ? &*expected : nullptr);
  std::vector<Round> rounds = roundRobin(comm.size());
  if (options.quick) rounds.resize(std::min<size_t>(rounds.size(), 1));
  report.pairs = measureRounds(comm, rounds, options.workload, progress);
  report.verdict = judge(report.hosts, report.pairs, options.thresholds);
  // Every rank holds the same results, so every rank plans the same further passes.
  if (const auto again = confirmRounds(report.pairs, report.verdict); !again.empty()) {
    progress("measuring the slow pairs again");
    keepBest(report.pairs, measureRounds(comm, again, options.workload, progress));
    report.verdict = judge(report.hosts, report.pairs, options.thresholds);
  }
  if (const auto retests = retestRounds(comm.size(), report.pairs, report.verdict);
      !retests.empty()) {
    progress("retesting the hosts of slow pairs against healthy ones");
    const auto more = measureRounds(comm, retests, options.workload, progress);
    report.pairs.insert(report.pairs.end(), more.begin(), more.end());
    report.verdict = judge(report.hosts, report.pairs, options.thresholds);
  }
  report.verdict.findings.insert(report.verdict.findings.begin(), inventoryFindings.begin(),
                                 inventoryFindings.end());
  if (options.allreduce && comm.size() > 1) {
    progress("all-reduce over every host");
    report.allreduceBusGBs = allreduceBusGBs(comm, options.workload);
  }
  if (!speaks) return report.verdict.healthy() ? kHealthy : kDegraded;
  std::cout << formatReport(report);
  writeReport(json, reportJson(report).dump(2) + "\n", options.json);
  writeReport(svg, heatmapSvg(report), options.svg);
  return report.verdict.healthy() ? kHealthy : kDegraded;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "tutti-validate: checks every link between the job's hosts and names the bad host "
      "or link. Exit status: 0 healthy, 1 degraded, 2 the validation failed."};
  Options options;
  app.add_flag("--quick", options.quick, "one round of pairs (and retests), not every pair");
  app.add_option("--bytes", options.workload.messageBytes, "bytes per bandwidth message")
      ->check(CLI::Range(size_t{1}, size_t{1} << 30));
  app.add_option("--messages", options.workload.messages, "bandwidth messages per direction")
      ->check(CLI::Range(1, 100000));
  app.add_option("--ping-pongs", options.workload.pingPongs, "latency round trips per pair")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--allreduce-bytes", options.workload.allreduceBytes, "all-reduce message size")
      ->check(CLI::Range(size_t{4}, size_t{1} << 34));
  app.add_flag("!--no-allreduce", options.allreduce, "skip the all-reduce");
  app.add_option("--min-bandwidth-fraction", options.thresholds.minBandwidthFraction,
                 "a direction below this fraction of the median is slow (default 0.93)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--max-latency-factor", options.thresholds.maxLatencyFactor,
                 "a latency above this multiple of the median is slow (default 2.1)")
      ->check(CLI::Range(1.0, 1000.0));
  app.add_option("--json", options.json, "write the JSON report (docs/validate.md) to this file");
  app.add_option("--svg", options.svg, "write the bandwidth heatmap (SVG) to this file");
  app.add_option("--name", options.name, "this host's label (default: its host name)");
  app.add_option("--expect", options.expect,
                 "a topology file (tutti-topo writes one) every host's inventory must match; "
                 "default: the majority of hosts")
      ->check(CLI::ExistingFile);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::ParseError& error) {
    app.exit(error);
    return kFailed;
  }
  try {
    return validate(options);
  } catch (const std::exception& error) {
    std::cerr << "tutti-validate: validation failed: " << error.what() << "\n";
    return kFailed;
  }
}
