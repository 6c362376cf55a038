#include "bench/options.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <limits>
#include <optional>

#include "bench/types.hpp"

namespace tutti::bench {
namespace {

constexpr int kUsageError = 2;

// The raw text of the options whose values tutti-bench checks itself, so that a message can
// quote what the user typed.
struct RawOptions {
  std::string minBytes = "8", maxBytes = "64M", stepBytes, dtype = "float", op = "sum";
};

void addAllreduceOptions(CLI::App& sub, BenchOptions& o, RawOptions& raw) {
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
  sub.add_option("-c,--check", o.check, "check the results this many times per size (0: none)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub.add_option("-d,--datatype", raw.dtype,
                 "int8 uint8 int32 uint32 int64 uint64 half bfloat16 float double")
      ->capture_default_str();
  sub.add_option("-o,--op", raw.op, "sum prod min max avg")->capture_default_str();
  sub.add_option("-z,--blocking", o.blocking, "accepted for nccl-tests compatibility")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub.add_option("--ranks", o.ranks,
                 "spawn this many local ranks (else: one rank of a launched job)")
      ->check(CLI::Range(1, 4096));
}

ParseResult usageError(const CLI::App& app, const std::string& what) {
  ParseResult result;
  result.exitCode = kUsageError;
  result.message = fmt::format("tutti-bench: {}\n{}", what, app.help());
  return result;
}

// Checks the values CLI11 could not; an error message, or nullopt when all is well.
std::optional<std::string> finish(BenchOptions& o, const RawOptions& raw) {
  auto dtype = parseDataType(raw.dtype);
  if (!dtype) return fmt::format("unknown data type '{}' (-d)", raw.dtype);
  o.dtype = *dtype;
  auto op = parseRedOp(raw.op);
  if (!op) return fmt::format("unknown reduction op '{}' (-o)", raw.op);
  o.op = *op;
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
  const size_t unit = typeSize(o.dtype);
  auto note = [&](const char* flag, const std::string& text, size_t bytes) {
    if (bytes % unit != 0) {
      o.notes.push_back(fmt::format(
          "tutti-bench: {} {} is not a multiple of the size of {} ({} bytes): rounded down", flag,
          text, typeName(o.dtype), unit));
    }
  };
  note("-b", raw.minBytes, o.minBytes);
  note("-e", raw.maxBytes, o.maxBytes);
  if (o.stepBytes) note("-i", raw.stepBytes, o.stepBytes);
  return std::nullopt;
}

}  // namespace

ParseResult parseCommandLine(int argc, const char* const* argv) {
  CLI::App app{"Measures collective bandwidth in nccl-tests' format.", "tutti-bench"};
  app.require_subcommand(1);
  BenchOptions options;
  RawOptions raw;
  CLI::App* allreduce = app.add_subcommand("allreduce", "all-reduce bandwidth (all_reduce_perf)");
  addAllreduceOptions(*allreduce, options, raw);

  if (argc >= 2 && argv[1][0] != '-' && std::string(argv[1]) != "allreduce") {
    return usageError(app, fmt::format("unknown collective '{}' (known: allreduce)", argv[1]));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    ParseResult result;
    result.message = (allreduce->parsed() ? allreduce : &app)->help();
    return result;
  } catch (const CLI::ParseError& e) {
    return usageError(allreduce->parsed() ? *allreduce : app, e.what());
  }
  options.collective = "allreduce";
  if (auto error = finish(options, raw)) return usageError(*allreduce, *error);

  for (int i = 0; i < argc; ++i) {
    options.commandLine += (i ? " " : "") + std::string(argv[i]);
  }
  ParseResult result;
  result.run = true;
  result.options = std::move(options);
  return result;
}

std::vector<size_t> sweepSizes(const BenchOptions& o) {
  const size_t unit = typeSize(o.dtype);
  std::vector<size_t> sizes;
  for (size_t size = o.minBytes; size <= o.maxBytes;) {
    sizes.push_back(size / unit * unit);
    size_t next = o.stepBytes ? size + o.stepBytes : size * o.stepFactor;
    if (next <= size) break;  // overflow
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
