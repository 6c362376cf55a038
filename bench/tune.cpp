#include "bench/tune.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "bench/crossovers.hpp"
#include "bench/json_report.hpp"
#include "bench/options.hpp"
#include "bench/streaming_stores.hpp"
#include "runtime/tuning/machine_tuning.hpp"
#include "runtime/tuning/tuning_file.hpp"
#include "tools/launch/launch.hpp"

namespace tutti::bench {
namespace {

struct TuneOptions {
  int ranks = 0;
  std::string minBytes = "8", maxBytes = "64M", factor = "2", iters = "20", warmup = "5";
  std::string rounds = "1";
  std::string transport;
  std::string output, from, fromStreaming;
  bool save = false;
};

// The sweep's command line: `self` allreduce with the fixed algorithms, its results to `json`.
std::vector<std::string> sweepArgs(const TuneOptions& o, const std::string& self,
                                   const std::string& json) {
  std::vector<std::string> args = {self, "allreduce", "--algo",   "all",    "-b", o.minBytes,
                                   "-e", o.maxBytes,  "-f",       o.factor, "-n", o.iters,
                                   "-w", o.warmup,    "--rounds", o.rounds, "-J", json};
  if (!o.transport.empty()) args.insert(args.end(), {"--transport", o.transport});
  return args;
}

// What the sweep's ranks would refuse of tune's options, refused before any rank starts: the
// first line of tutti-bench's own message ("" when they would run).
std::string sweepOptionsError(const TuneOptions& o) {
  const std::vector<std::string> args = sweepArgs(o, "tutti-bench", "sweep.json");
  std::vector<const char*> argv;
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  const ParseResult parsed = parseCommandLine(static_cast<int>(argv.size()), argv.data());
  if (parsed.run) return "";
  const std::string message = parsed.message.substr(0, parsed.message.find('\n'));
  const std::string prefix = "tutti-bench: ";
  return message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message;
}

// Runs the sweep over o.ranks local ranks of `self`, its results written to `json`, under the
// tuning file `tuning`.
void sweep(const TuneOptions& o, const std::string& self, const std::string& json,
           const std::string& tuning) {
  launch::Options launch;
  launch.nranks = o.ranks;
  launch.launcherName = "tutti-bench tune";
  launch.extraEnv = {{"TUTTI_TUNING_FILE", tuning}};
  launch.argv = sweepArgs(o, self, json);
  const int exitCode = launch::spawnRanks(launch).exitCode;
  if (exitCode != 0)
    throw std::runtime_error(fmt::format("the sweep's ranks exited {} (the sweep: {})", exitCode,
                                         fmt::join(launch.argv, " ")));
}

void writeFile(const std::string& path, const std::string& text) {
  std::ofstream file(path);
  file << text;
  if (!file.flush()) throw std::runtime_error(fmt::format("{}: cannot write it", path));
}

// A table written for one sweep, removed however the sweep ends.
class ScratchTable {
 public:
  // `table` with every section's shm_streaming_min_bytes set to `streamingFrom`.
  ScratchTable(std::string path, runtime::TuningTable table, size_t streamingFrom)
      : path_(std::move(path)) {
    table.any.shmStreamingMinBytes = streamingFrom;
    for (auto& [ranks, section] : table.byRanks) section.shmStreamingMinBytes = streamingFrom;
    writeFile(path_,
              runtime::formatTuningFile(table, "tutti-bench tune: one of its sweeps' tables"));
  }
  ~ScratchTable() {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }
  ScratchTable(const ScratchTable&) = delete;
  ScratchTable& operator=(const ScratchTable&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// What the crossovers are read off: the sweep with plain stores (run into `json`, or read from
// --from) and, where it ran over shared memory, the choice of streaming stores: the same sweep
// with streaming stores at every size (run, or read from --from-streaming), merged where they
// gained (streaming_stores.hpp). --from alone keeps the table's choice.
struct Measured {
  Results results;
  std::optional<size_t> streamingFrom;
  std::string streamingJson;
};

Measured measure(const TuneOptions& o, const std::string& self, const std::string& json,
                 const runtime::TuningTable& base) {
  const size_t never =
      static_cast<size_t>(runtime::tuningKeyOf(&runtime::Tuning::shmStreamingMinBytes).max);
  Measured measured;
  measured.streamingJson = o.from.empty() ? o.output + ".streaming.json" : o.fromStreaming;
  if (o.from.empty()) {
    const ScratchTable plain(o.output + ".plain-stores", base, never);
    sweep(o, self, json, plain.path());
  }
  measured.results = readJson(json);
  const bool overShm = overTcp(measured.results) == false;
  if (!o.fromStreaming.empty() && !overShm)
    throw std::runtime_error(
        fmt::format("--from-streaming: {} ran over transports {}, not shared memory only", json,
                    fmt::join(measured.results.transports, ",")));
  if (!overShm || (!o.from.empty() && o.fromStreaming.empty())) return measured;
  if (o.from.empty()) {
    const ScratchTable streaming(o.output + ".streaming-stores", base, 0);
    sweep(o, self, measured.streamingJson, streaming.path());
  }
  StreamingChoice choice =
      chooseStreaming(measured.results, readJson(measured.streamingJson), never);
  measured.results = std::move(choice.merged);
  measured.streamingFrom = choice.minBytes;
  return measured;
}

}  // namespace

int runTune(int argc, char** argv, const std::string& self) {
  CLI::App app{
      "tutti-bench tune: measure the fixed all-reduce algorithms and write the tuning "
      "table their crossovers give (TUTTI_TUNING_FILE, docs/tuning.md)",
      "tutti-bench tune"};
  TuneOptions o;
  app.add_option("-o,--output", o.output, "the tuning file to write");
  app.add_flag("--save", o.save,
               "write it as this machine's table instead, which tutti reads where "
               "TUTTI_TUNING_FILE is unset or auto "
               "(" +
                   runtime::machineTuningPath() + ")");
  CLI::Option* ranks =
      app.add_option("--ranks", o.ranks, "local ranks to sweep with")->check(CLI::Range(2, 4096));
  app.add_option("--from", o.from,
                 "read this sweep (allreduce --algo all -J) instead of running one")
      ->excludes(ranks);
  app.add_option("--from-streaming", o.fromStreaming,
                 "with --from: the same sweep with streaming stores at every size (what tune "
                 "writes beside its sweep as FILE.streaming.json), to choose where they run")
      ->needs("--from");
  app.add_option("-b,--minbytes", o.minBytes, "smallest size")->capture_default_str();
  app.add_option("-e,--maxbytes", o.maxBytes, "largest size")->capture_default_str();
  app.add_option("-f,--stepfactor", o.factor, "size factor between steps")->capture_default_str();
  app.add_option("-n,--iters", o.iters, "timed iterations per size")->capture_default_str();
  app.add_option("-w,--warmup_iters", o.warmup, "warm-up iterations")->capture_default_str();
  app.add_option("--rounds", o.rounds,
                 "measure each size this many times, the algorithms in turn, and read each "
                 "one's median round (a machine whose speed drifts moves every algorithm alike)")
      ->capture_default_str();
  app.add_option("--transport", o.transport, "shm or tcp (TUTTI_TRANSPORT for the sweep)")
      ->check(CLI::IsMember({"shm", "tcp"}));
  try {
    app.parse(argc - 1, argv + 1);
    if (o.ranks == 0 && o.from.empty()) throw CLI::ValidationError("--ranks N or --from JSON");
    if (o.output.empty() == !o.save) throw CLI::ValidationError("-o FILE or --save, one of them");
    if (o.from.empty()) {
      if (const std::string error = sweepOptionsError(o); !error.empty())
        throw CLI::ValidationError(error);
    }
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::ParseError& error) {
    app.exit(error);
    return 2;
  }
  try {
    if (o.save) {
      o.output = runtime::machineTuningPath();
      if (o.output.empty())
        throw std::runtime_error("--save: neither an absolute XDG_CACHE_HOME nor HOME is set");
      std::filesystem::create_directories(std::filesystem::path(o.output).parent_path());
    }
    // --save adds the sweep's rank count to this machine's table (the first sweep is every
    // count's too); -o writes the sweep's table alone, over the one in force.
    std::error_code missing;
    const bool adding = o.save && std::filesystem::exists(o.output, missing);
    const runtime::TuningSource base =
        adding ? runtime::TuningSource{runtime::readTuningFile(o.output, o.output), o.output}
               : runtime::tuningInForce();
    const std::string json = o.from.empty() ? o.output + ".json" : o.from;
    const Measured measured = measure(o, self, json, base.table);
    const Results& results = measured.results;
    Crossovers found = crossovers(results, base.table.forRanks(results.nranks));
    if (measured.streamingFrom) {
      found.table.shmStreamingMinBytes = *measured.streamingFrom;
      found.notes.push_back(fmt::format(
          "shm_streaming_min_bytes {}: where streaming stores gained over plain ones ({})",
          runtime::formatTuningValue(found.table,
                                     runtime::tuningKeyOf(&runtime::Tuning::shmStreamingMinBytes)),
          measured.streamingJson));
    }
    runtime::TuningTable table = adding ? base.table : runtime::TuningTable{found.table, {}};
    if (o.save) table.byRanks[results.nranks] = found.table;
    std::string header = fmt::format(
        "tutti-bench tune: {} ranks, transports {}, CPU {}, {:%Y-%m-%d %H:%M} UTC\n"
        "sweep {} (allreduce --algo all{}, float32 sum, ordinary buffers); other keys from {}",
        results.nranks, fmt::join(results.transports, ","), runtime::cpuModel(),
        fmt::gmtime(std::chrono::system_clock::to_time_t(std::chrono::system_clock::now())), json,
        o.from.empty() ? " --rounds " + o.rounds : "", base.origin);
    for (const std::string& note : found.notes) header += "\n" + note;
    // Read back before it replaces anything, and renamed into place: a job starting meanwhile
    // reads the old table or the new one, never half of one.
    const std::string text = runtime::formatTuningFile(table, header);
    runtime::parseTuning(text, o.output);
    const std::string written = o.output + ".new";
    writeFile(written, text);
    std::filesystem::rename(written, o.output);
    const std::string use =
        o.save ? fmt::format(
                     "this machine's table, now with its part for {} ranks: in force "
                     "where TUTTI_TUNING_FILE is unset or auto",
                     results.nranks)
               : fmt::format("use it with TUTTI_TUNING_FILE={}", o.output);
    const std::string picks =
        o.save ? fmt::format("tutti-info algorithms --ranks {}", results.nranks)
               : fmt::format("TUTTI_TUNING_FILE={} tutti-info algorithms", o.output);
    fmt::print("tutti-bench tune: wrote {} ({}; see its picks with {})\n", o.output, use, picks);
    for (const std::string& note : found.notes) fmt::print("  {}\n", note);
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "tutti-bench tune: {}\n", e.what());
    return 1;
  }
}

}  // namespace tutti::bench
