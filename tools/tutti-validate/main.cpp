// tutti-validate: is this cluster's interconnect healthy, and if not, what exactly is wrong.
// One rank per host, started like any tutti program (tuttirun, mpirun, srun, torchrun). Exit
// status: 0 healthy, 1 degraded (the report names what), 2 the validation itself failed.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>

#include "tools/cli/number_checks.hpp"
#include "tools/tutti-validate/heatmap.hpp"
#include "tools/tutti-validate/inventory.hpp"
#include "tools/tutti-validate/measure.hpp"
#include "tools/tutti-validate/report.hpp"

namespace {

using namespace tutti::validate;
using tutti::Comm;

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
  // --rails: the interfaces to measure, empty for auto (chooseRails picks); nullopt for none.
  std::optional<std::vector<std::string>> rails = std::vector<std::string>{};
  std::chrono::milliseconds railTimeout{30000};
};

// --rails' value as Options::rails holds it; throws for an empty name.
std::optional<std::vector<std::string>> wantedRails(const std::string& spec) {
  if (spec == "none") return std::nullopt;
  std::vector<std::string> names;
  if (spec == "auto") return names;
  for (size_t start = 0;;) {
    const size_t comma = spec.find(',', start);
    names.push_back(spec.substr(start, comma == std::string::npos ? comma : comma - start));
    if (names.back().empty())
      throw std::runtime_error("--rails '" + spec + "' has an empty interface name");
    if (comma == std::string::npos) return names;
    start = comma + 1;
  }
}

using Progress = std::function<void(const std::string&)>;

struct PairsOutcome {
  std::vector<PairResult> pairs;
  Verdict verdict;
};

// Every pair (one round with --quick), the slow ones measured again, and the hosts of slow pairs
// retested against healthy ones (verdict.hpp); collective over `comm`.
PairsOutcome measurePairs(Comm& comm, const std::vector<std::string>& hosts, const Options& options,
                          const Progress& progress) {
  PairsOutcome outcome;
  std::vector<Round> rounds = roundRobin(comm.size());
  if (options.quick) rounds.resize(std::min<size_t>(rounds.size(), 1));
  outcome.pairs = measureRounds(comm, rounds, options.workload, progress);
  outcome.verdict = judge(hosts, outcome.pairs, options.thresholds);
  // Every rank holds the same results, so every rank plans the same further passes.
  if (const auto again = confirmRounds(outcome.pairs, outcome.verdict); !again.empty()) {
    progress("measuring the slow pairs again");
    keepBest(outcome.pairs, measureRounds(comm, again, options.workload, progress));
    outcome.verdict = judge(hosts, outcome.pairs, options.thresholds);
  }
  if (const auto retests = retestRounds(comm.size(), outcome.pairs, outcome.verdict);
      !retests.empty()) {
    progress("retesting the hosts of slow pairs against healthy ones");
    const auto more = measureRounds(comm, retests, options.workload, progress);
    outcome.pairs.insert(outcome.pairs.end(), more.begin(), more.end());
    outcome.verdict = judge(hosts, outcome.pairs, options.thresholds);
  }
  return outcome;
}

// Runs one step of the rails phase, on every rank; true when it succeeded on every one. A step that
// failed on some rank (a cut link: a split or an operation over the rail stalled past
// --rail-timeout; or a peer's failure) ends the phase alike on every rank, with one finding naming
// the rail and the first rank's error: the ranks tell each other over the job's communicator,
// unless a failed split failed that one too (each then says what it saw).
bool railStep(Comm& comm, const std::string& rail, std::vector<Finding>& findings,
              const std::function<void()>& step) {
  std::string error;
  try {
    step();
  } catch (const tutti::CommError& failure) {
    error = fmt::format("rank {} saw {}", comm.rank(), failure.what());
  }
  std::vector<std::string> errors;
  try {
    errors = gatherText(comm, error);
  } catch (const tutti::CommError& failure) {
    errors = {error.empty() ? fmt::format("rank {} saw {}", comm.rank(), failure.what()) : error};
  }
  for (const std::string& seen : errors)
    if (!seen.empty()) {
      findings.push_back(
          {Finding::Kind::kRail, -1, -1, "failed, and nothing more was measured: " + seen, rail});
      return false;
    }
  return true;
}

// The all-reduce on each rail; on a slow rail, its pairs (as many rounds as --quick says) to say
// which host or link. Returns the rails' findings. The last phase on the job's communicator, so
// it keeps --rail-timeout.
std::vector<Finding> measureRails(Comm& comm, Report& report, const Options& options,
                                  const Progress& progress) {
  if (!options.rails) return {};
  const RailChoice choice = chooseRails(gatherInterfaces(comm), *options.rails);
  std::vector<Finding> findings = choice.refused;
  comm.setTimeout(options.railTimeout);
  std::vector<Comm> comms;
  for (const std::string& name : choice.rails) {
    progress("all-reduce over rail " + name);
    const bool measured = railStep(comm, name, findings, [&] {
      comms.push_back(railComm(comm, name));
      report.rails.push_back({name, allreduceBusGBs(comms.back(), options.workload)});
    });
    if (!measured) return findings;
  }
  // A slow rail is measured once more and keeps its better figure, as a slow pair is: one bad
  // sample on a busy host is noise.
  judgeRails(report.rails, options.thresholds);
  for (size_t i = 0; i < report.rails.size(); ++i) {
    RailResult& rail = report.rails[i];
    if (!rail.slow) continue;
    progress("all-reduce over rail " + rail.name + " again");
    const bool measured = railStep(comm, rail.name, findings, [&] {
      rail.allreduceBusGBs =
          std::max(rail.allreduceBusGBs, allreduceBusGBs(comms[i], options.workload));
    });
    if (!measured) return findings;
  }
  const std::vector<Finding> slowRails = judgeRails(report.rails, options.thresholds);
  findings.insert(findings.end(), slowRails.begin(), slowRails.end());
  for (size_t i = 0; i < report.rails.size(); ++i) {
    RailResult& rail = report.rails[i];
    if (!rail.slow) continue;
    progress("pairs over rail " + rail.name);
    PairsOutcome outcome;
    if (!railStep(comm, rail.name, findings,
                  [&] { outcome = measurePairs(comms[i], report.hosts, options, progress); }))
      return findings;
    for (Finding& finding : outcome.verdict.findings) {
      finding.rail = rail.name;
      findings.push_back(std::move(finding));
    }
    rail.pairs = std::move(outcome.pairs);
    rail.slowPairs = std::move(outcome.verdict.slow);
  }
  return findings;
}

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
  PairsOutcome pairs = measurePairs(comm, report.hosts, options, progress);
  report.pairs = std::move(pairs.pairs);
  report.verdict = std::move(pairs.verdict);
  report.verdict.findings.insert(report.verdict.findings.begin(), inventoryFindings.begin(),
                                 inventoryFindings.end());
  if (options.allreduce && comm.size() > 1) {
    progress("all-reduce over every host");
    report.allreduceBusGBs = allreduceBusGBs(comm, options.workload);
    const std::vector<Finding> railFindings = measureRails(comm, report, options, progress);
    report.verdict.findings.insert(report.verdict.findings.end(), railFindings.begin(),
                                   railFindings.end());
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
  app.add_flag("!--no-allreduce", options.allreduce, "skip the all-reduce (and the rails')");
  std::string rails = "auto";
  app.add_option("--rails", rails,
                 "the all-reduce per rail: 'auto' (every interface all hosts have, when two or "
                 "more), 'none', or interface names separated by commas (default auto)");
  double railTimeoutSeconds = 30;
  app.add_option("--rail-timeout", railTimeoutSeconds,
                 "seconds a rail may stall (a cut link) before it is reported failed (default 30)")
      ->check(tutti::cli::finiteIn(1, 3600));
  app.add_option("--min-bandwidth-fraction", options.thresholds.minBandwidthFraction,
                 "a direction below this fraction of the median is slow (default 0.93)")
      ->check(tutti::cli::finiteIn(0, 1));
  app.add_option("--max-latency-factor", options.thresholds.maxLatencyFactor,
                 "a latency above this multiple of the median is slow (default 2.1)")
      ->check(tutti::cli::finiteIn(1, 1000));
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
    options.railTimeout =
        std::chrono::milliseconds(static_cast<int64_t>(railTimeoutSeconds * 1000));
    options.rails = wantedRails(rails);  // refused before any job
    return validate(options);
  } catch (const std::exception& error) {
    std::cerr << "tutti-validate: validation failed: " << error.what() << "\n";
    return kFailed;
  }
}
