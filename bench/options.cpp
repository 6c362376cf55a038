#include "bench/options.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <limits>
#include <optional>

#include "bench/collectives.hpp"
#include "bench/types.hpp"
#include "runtime/collectives/algorithm.hpp"
#include "tools/cli/number_checks.hpp"

namespace tutti::bench {
namespace {

constexpr int kUsageError = 2;

// The raw text of the options whose values tutti-bench checks itself, so that a message can
// quote what the user typed.
struct RawOptions {
  std::string minBytes = "8", maxBytes = "64M", stepBytes, dtype = "float", op = "sum", root = "0";
  std::string algo;
  std::string fault;
};

void addOptions(CLI::App& sub, BenchOptions& o, RawOptions& raw) {
  sub.add_option("-b,--minbytes", raw.minBytes, "smallest message size (K/M/G suffixes)")
      ->capture_default_str();
  sub.add_option("-e,--maxbytes", raw.maxBytes, "largest message size")->capture_default_str();
  sub.add_option("-f,--stepfactor", o.stepFactor, "multiply the size by this factor each step")
      ->capture_default_str()
      ->check(CLI::Range(size_t{2}, std::numeric_limits<size_t>::max()));
  sub.add_option("-i,--stepbytes", raw.stepBytes, "add this many bytes each step (instead of -f)")
      ->excludes("-f");
  sub.add_option("-n,--iters", o.iters, "timed iterations per size")
      ->capture_default_str()
      ->check(CLI::Range(1, std::numeric_limits<int>::max()));
  sub.add_option("-w,--warmup_iters", o.warmupIters, "warm-up iterations")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub.add_option("-m,--agg_iters", o.aggIters, "operations per iteration, issued in one group")
      ->capture_default_str()
      ->check(CLI::Range(1, std::numeric_limits<int>::max()));
  sub.add_option("-c,--check", o.check, "check the results this many times per size (0: none)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub.add_option("-d,--datatype", raw.dtype,
                 "int8 uint8 int32 uint32 int64 uint64 half bfloat16 float double, or all")
      ->capture_default_str();
  sub.add_option("-o,--op", raw.op, "sum prod min max avg, or all")->capture_default_str();
  sub.add_option("-r,--root", raw.root, "root rank of broadcast and reduce, or all")
      ->capture_default_str();
  sub.add_option("-a,--average", o.aggregate,
                 "time reported across ranks: 0 rank 0, 1 average, 2 minimum, 3 maximum")
      ->capture_default_str()
      ->check(CLI::Range(0, 3));
  sub.add_option("-N,--run_cycles", o.cycles, "run the whole sweep this many times (0: forever)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub.add_option("--rounds", o.rounds,
                 "measure each size this many times, the column groups (--algo) in turn, and "
                 "report each one's median round")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  sub.add_option("-T,--timeout", o.timeoutSeconds,
                 "abort when one size (all its rounds) takes longer than this many seconds (0: no "
                 "limit)")
      ->check(tutti::cli::seconds());
  sub.add_flag("-u,--misaligned", o.misaligned, "buffers start one element past an alignment");
  sub.add_flag("-I,--iteration_stats", o.iterationStats,
               "time every iteration: min, max, p50, p99, coefficient of variation");
  sub.add_flag("-M,--memory", o.memoryReport, "report buffer sizes and peak resident memory");
  CLI::Option* verbose =
      sub.add_flag("--verbose", o.verbose,
                   "also print each case and warm-up as it starts, and each round's time");
  sub.add_flag("--quiet", o.quiet, "print the table only")->excludes(verbose);
  std::vector<std::string> algoChoices = kAllReduceAlgorithms;
  algoChoices.push_back("all");
  sub.add_option("--algo", raw.algo,
                 fmt::format("all-reduce algorithm: {}, or all (a column group each)",
                             fmt::join(kAllReduceAlgorithms, ", ")))
      ->check(CLI::IsMember(algoChoices));
  sub.add_option("--transport", o.transport,
                 "shm, tcp or ucx (sets TUTTI_TRANSPORT for the job; lists and ^ through the "
                 "variable itself)")
      ->check(CLI::IsMember({"shm", "tcp", "ucx"}));
  sub.add_option("--buffers", o.buffers,
                 "where the buffers live: host (aligned_alloc) or registered (tutti_mem_alloc, "
                 "which the direct all-reduce reads in place)")
      ->capture_default_str()
      ->check(CLI::IsMember({"host", "registered"}));
  sub.add_option("--device", o.device,
                 "cpu, cuda (buffers in GPU memory: a GPU per local rank, shared when there are "
                 "more ranks than GPUs), or auto: cuda where this host has a GPU")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  sub.add_option("-J,--json", o.jsonPath, "write the results as JSON to this file");
  sub.add_option("--csv", o.csvPath, "write the results as CSV to this file");
  sub.add_option("--plot", o.plotPath, "plot busbw against size into this SVG file");
  sub.add_option("--compare", o.comparePath,
                 "compare with a -J file: a ratio column (busbw / the baseline's, out-of-place)");
  sub.add_option("--min-ratio", o.minRatio, "with --compare: fail when a ratio is below this")
      ->capture_default_str()
      ->check(tutti::cli::nonNegative());
  sub.add_option("--min-busbw", o.minBusBw,
                 "fail when the average bus bandwidth (GB/s) is below this")
      ->check(tutti::cli::nonNegative());
  sub.add_option("-z,--blocking", o.blocking, "accepted for nccl-tests compatibility")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub.add_option("--ranks", o.ranks,
                 "spawn this many local ranks (else: one rank of a launched job)")
      ->check(CLI::Range(1, 4096));
  // No group: --help leaves the tests' hook out.
  sub.add_option("--fault", raw.fault, "tests only: corrupt one output element (RANK:INDEX)")
      ->group("");
}

ParseResult usageError(const CLI::App& app, const std::string& what) {
  ParseResult result;
  result.exitCode = kUsageError;
  result.message = fmt::format("tutti-bench: {}\n{}", what, app.help());
  return result;
}

// Checks the values CLI11 could not; an error message, or nullopt when all is well.
std::optional<std::string> finish(BenchOptions& o, const RawOptions& raw) {
  o.dtypes.clear();
  if (raw.dtype == "all") {
    for (int t = 0; t < tuttiNumTypes; ++t) o.dtypes.push_back(static_cast<tuttiDataType_t>(t));
  } else if (auto dtype = parseDataType(raw.dtype)) {
    o.dtypes.push_back(*dtype);
  } else {
    return fmt::format("unknown data type '{}' (-d)", raw.dtype);
  }
  o.ops.clear();
  if (raw.op == "all") {
    for (int op = 0; op < tuttiNumOps; ++op) o.ops.push_back(static_cast<tuttiRedOp_t>(op));
  } else if (auto op = parseRedOp(raw.op)) {
    o.ops.push_back(*op);
  } else {
    return fmt::format("unknown reduction op '{}' (-o)", raw.op);
  }
  if (raw.algo == "all") {
    o.algorithms = kAllReduceAlgorithms;
  } else if (!raw.algo.empty()) {
    o.algorithms = {raw.algo};
  }
  if (!o.algorithms.empty() && o.collective != "allreduce") {
    return fmt::format("--algo chooses all-reduce algorithms: not for {}", o.collective);
  }
  if (o.device == "cuda" && o.buffers == "registered") {
    return std::string("--buffers registered is host memory: not with --device cuda");
  }
  if (!raw.fault.empty()) {
    const auto fault = Fault::parse(raw.fault);
    if (!fault) return fmt::format("--fault {}: not RANK:INDEX", raw.fault);
    o.fault = *fault;
  }
  o.allRoots = raw.root == "all";
  if (!o.allRoots) {
    size_t end = 0;
    try {
      o.root = std::stoi(raw.root, &end);
    } catch (const std::exception&) {
      end = 0;
    }
    if (end == 0 || end != raw.root.size() || o.root < 0) {
      return fmt::format("-r {}: not a rank (a number >= 0, or all)", raw.root);
    }
    if (o.ranks > 0 && o.root >= o.ranks) {
      return fmt::format("-r {}: root must be below the number of ranks ({})", o.root, o.ranks);
    }
  }
  const char* sizeHelp = "not a size (a number with an optional K, M or G suffix)";
  auto minBytes = parseSize(raw.minBytes);
  if (!minBytes) return fmt::format("-b {}: {}", raw.minBytes, sizeHelp);
  auto maxBytes = parseSize(raw.maxBytes);
  if (!maxBytes) return fmt::format("-e {}: {}", raw.maxBytes, sizeHelp);
  o.minBytes = *minBytes;
  o.maxBytes = *maxBytes;
  if (o.maxBytes < o.minBytes) {
    return fmt::format("-e {} is smaller than -b {}", raw.maxBytes, raw.minBytes);
  }
  if (!raw.stepBytes.empty()) {
    auto step = parseSize(raw.stepBytes);
    if (!step || *step == 0) return fmt::format("-i {}: not a positive size", raw.stepBytes);
    o.stepBytes = *step;
  } else if (o.minBytes == 0) {
    return std::string("-b 0 with a step factor never grows: give -b > 0 or a step with -i");
  }
  for (tuttiDataType_t dtype : o.dtypes) {
    const size_t unit = typeSize(dtype);
    auto note = [&](const char* flag, const std::string& text, size_t bytes) {
      if (bytes % unit != 0) {
        o.notes.push_back(fmt::format(
            "tutti-bench: {} {} is not a multiple of the size of {} ({} bytes): rounded down", flag,
            text, typeName(dtype), unit));
      }
    };
    note("-b", raw.minBytes, o.minBytes);
    note("-e", raw.maxBytes, o.maxBytes);
    if (o.stepBytes) note("-i", raw.stepBytes, o.stepBytes);
  }
  return std::nullopt;
}

}  // namespace

// The algorithm table's all-reduce entries, in its order, then auto.
const std::vector<std::string> kAllReduceAlgorithms = [] {
  std::vector<std::string> choices = runtime::allReduceChoices();
  std::rotate(choices.begin(), choices.begin() + 1, choices.end());
  return choices;
}();

ParseResult parseCommandLine(int argc, const char* const* argv) {
  CLI::App app{"Measures collective bandwidth in nccl-tests' format.", "tutti-bench"};
  app.footer("tutti-bench tune --ranks N -o FILE: a tuning table from a sweep (tune --help)");
  app.require_subcommand(1);
  BenchOptions options;
  RawOptions raw;
  for (const auto& c : collectives())
    addOptions(*app.add_subcommand(c.name, c.summary), options, raw);
  auto chosen = [&]() -> CLI::App* {
    std::vector<CLI::App*> parsed = app.get_subcommands();
    return parsed.empty() ? nullptr : parsed.front();
  };

  if (argc >= 2 && argv[1][0] != '-' && !findCollective(argv[1])) {
    return usageError(
        app, fmt::format("unknown collective '{}' (known: {})", argv[1], collectiveNames()));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    ParseResult result;
    result.message = (chosen() ? chosen() : &app)->help();
    return result;
  } catch (const CLI::ParseError& e) {
    return usageError(chosen() ? *chosen() : app, e.what());
  }
  options.collective = chosen()->get_name();
  if (auto error = finish(options, raw)) return usageError(*chosen(), *error);

  for (int i = 0; i < argc; ++i) {
    options.commandLine += (i ? " " : "") + std::string(argv[i]);
  }
  ParseResult result;
  result.run = true;
  result.options = std::move(options);
  return result;
}

std::vector<size_t> sweepSizes(const BenchOptions& o, size_t unit) {
  std::vector<size_t> sizes;
  for (size_t size = o.minBytes; size <= o.maxBytes;) {
    sizes.push_back(size / unit * unit);
    size_t next = o.stepBytes ? size + o.stepBytes : size * o.stepFactor;
    if (next <= size) break;  // overflow
    size = next;
  }
  return sizes;
}

std::vector<size_t> warmupSizes(const BenchOptions& o, size_t unit) {
  if (!o.nccl) {
    const std::vector<size_t> sizes = sweepSizes(o, unit);
    return {sizes.back(), sizes.front()};
  }
  std::vector<size_t> sizes;
  for (size_t size = o.minBytes; size <= o.maxBytes;) {
    sizes.push_back(size / unit * unit);
    const size_t next = size ? size * 2 : 1;  // nccl-tests would stay at 0 forever
    if (next <= size) break;                  // overflow
    size = next;
  }
  return sizes;
}

std::vector<std::string> argvWithoutRanks(int argc, const char* const* argv) {
  std::vector<std::string> out;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--ranks") {
      ++i;  // and its value
    } else if (arg.rfind("--ranks=", 0) != 0) {
      out.push_back(arg);
    }
  }
  return out;
}

}  // namespace tutti::bench
