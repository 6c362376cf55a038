// getopt_long rather than CLI11 here: a drop-in must accept exactly what nccl-tests' getopt_long
// accepts (bundled short options, "-n5", "--iters=5", unique prefixes of long names, options
// after operands) and read numbers with its strtol tolerance, which no CLI library reproduces.
#include "bench/nccl_tests_args.hpp"

#include <fmt/format.h>
#include <getopt.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench/types.hpp"
#include "tools/cli/seconds.hpp"

namespace tutti::bench {
namespace {

struct Program {
  const char* name;
  const char* collective;  // "": nccl-tests has it, tutti has no such collective
};

constexpr std::array<Program, 11> kPrograms = {{
    {"all_reduce_perf", "allreduce"},
    {"all_gather_perf", "allgather"},
    {"reduce_scatter_perf", "reducescatter"},
    {"broadcast_perf", "broadcast"},
    {"reduce_perf", "reduce"},
    {"alltoall_perf", "alltoall"},
    {"sendrecv_perf", "sendrecv"},
    {"scatter_perf", ""},
    {"gather_perf", ""},
    {"hypercube_perf", ""},
    {"alltoallv_perf", ""},
}};

// nccl-tests' order for -d all and -o all (not tutti's enum order), so rows come out as its do.
constexpr std::array<tuttiDataType_t, 10> kTypeOrder = {
    tuttiInt8,   tuttiUint8,   tuttiInt32,   tuttiUint32,  tuttiInt64,
    tuttiUint64, tuttiFloat16, tuttiFloat32, tuttiFloat64, tuttiBfloat16};
constexpr std::array<tuttiRedOp_t, 5> kOpOrder = {tuttiSum, tuttiProd, tuttiMax, tuttiMin,
                                                  tuttiAvg};

constexpr const char* kShortOptions =
    "t:g:b:e:i:f:n:m:w:N:p:I:K:c:o:d:r:z:y:T:hG:C:a:R:x:D:V:J:S:M:u:";

const option kLongOptions[] = {
    {"nthreads", required_argument, nullptr, 't'},
    {"ngpus", required_argument, nullptr, 'g'},
    {"minbytes", required_argument, nullptr, 'b'},
    {"maxbytes", required_argument, nullptr, 'e'},
    {"stepbytes", required_argument, nullptr, 'i'},
    {"stepfactor", required_argument, nullptr, 'f'},
    {"iters", required_argument, nullptr, 'n'},
    {"agg_iters", required_argument, nullptr, 'm'},
    {"warmup_iters", required_argument, nullptr, 'w'},
    {"run_cycles", required_argument, nullptr, 'N'},
    {"parallel_init", required_argument, nullptr, 'p'},
    {"check", required_argument, nullptr, 'c'},
    {"op", required_argument, nullptr, 'o'},
    {"datatype", required_argument, nullptr, 'd'},
    {"root", required_argument, nullptr, 'r'},
    {"blocking", required_argument, nullptr, 'z'},
    {"stream_null", required_argument, nullptr, 'y'},
    {"timeout", required_argument, nullptr, 'T'},
    {"cudagraph", required_argument, nullptr, 'G'},
    {"report_cputime", required_argument, nullptr, 'C'},
    {"report_timestamps", required_argument, nullptr, 'S'},
    {"output_file", required_argument, nullptr, 'J'},
    {"average", required_argument, nullptr, 'a'},
    {"local_register", required_argument, nullptr, 'R'},
    {"cta_policy", required_argument, nullptr, 'x'},
    {"device_implementation", required_argument, nullptr, 'D'},
    {"device_cta_count", required_argument, nullptr, 'V'},
    {"memory", required_argument, nullptr, 'M'},
    {"unalign", required_argument, nullptr, 'u'},
    {"per_iter_timing", required_argument, nullptr, 'I'},
    {"per_iter_skip", required_argument, nullptr, 'K'},
    {"help", no_argument, nullptr, 'h'},
    {nullptr, 0, nullptr, 0},
};

std::string usage(const std::string& program) {
  return fmt::format(
      "USAGE: {} (tutti; docs/nccl-tests.md says what each flag does here)\n"
      "\t[-t,--nthreads <threads>] [-g,--ngpus <GPUs per thread>]: ranks per process = t*g\n"
      "\t[-b,--minbytes <bytes>] [-e,--maxbytes <bytes>] (K/M/G suffixes)\n"
      "\t[-i,--stepbytes <bytes>] [-f,--stepfactor <factor>]\n"
      "\t[-n,--iters <count>] [-m,--agg_iters <count>] [-w,--warmup_iters <count>]\n"
      "\t[-N,--run_cycles <count, 0: forever>] [-p,--parallel_init <0/1>]\n"
      "\t[-c,--check <check iterations>] [-o,--op <sum/prod/max/min/avg/all>]\n"
      "\t[-d,--datatype <type/all>] [-r,--root <rank, -1: all>] [-z,--blocking <0/1/2/3>]\n"
      "\t[-y,--stream_null <0/1>] [-T,--timeout <seconds>] [-G,--cudagraph <launches>]\n"
      "\t[-C,--report_cputime <0/1>] [-S,--report_timestamps <0/1>] [-J,--output_file "
      "<file.json>]\n"
      "\t[-a,--average <0 rank 0/1 avg/2 min/3 max>] [-R,--local_register <0/1/2>]\n"
      "\t[-x,--cta_policy <n>] [-D,--device_implementation <0>] [-V,--device_cta_count <n>]\n"
      "\t[-M,--memory <0/1>] [-u,--unalign <elements>] [-I,--per_iter_timing <0/1>]\n"
      "\t[-K,--per_iter_skip <count>] [-h,--help]\n",
      program);
}

// nccl-tests' size reader: a number, then at most one K/M/G (either case) after optional blanks;
// anything after that letter is ignored, as its sscanf ignores it. Negative: not a size.
double readSize(const char* text) {
  double size = 0;
  char suffix[2] = {};
  const int fields = std::sscanf(text, "%lf %1s", &size, suffix);
  if (fields == 1) return size;
  if (fields != 2) return -1;
  switch (suffix[0]) {
    case 'G':
    case 'g': return size * 1024 * 1024 * 1024;
    case 'M':
    case 'm': return size * 1024 * 1024;
    case 'K':
    case 'k': return size * 1024;
    default: return -1;
  }
}

long number(const char* text) {
  return std::strtol(text, nullptr, 0);
}

struct Raw {
  size_t minBytes = 32 << 20, maxBytes = 32 << 20, stepBytes = 1 << 20, stepFactor = 1;
  long type = tuttiFloat32;  // -1: all
  long op = tuttiSum;        // -1: all
  long root = 0;
  long average = 1, perIterTiming = 0, deviceImpl = 0, localRegister = 0, iters = 20, aggIters = 1;
  long cycles = 1, threads = 1, gpus = 1, unalign = 0;
};

// tutti's refusals of what nccl-tests would not survive; empty when the values are usable.
std::string refusal(const Raw& r) {
  if (r.iters < 1) return fmt::format("invalid iteration count -n {} (at least 1)", r.iters);
  if (r.aggIters < 1) return fmt::format("invalid aggregated iteration count -m {}", r.aggIters);
  if (r.cycles < 0) return fmt::format("invalid cycle count -N {} (0: forever)", r.cycles);
  if (r.average < 0 || r.average > 3) return fmt::format("invalid -a {} (0 to 3)", r.average);
  if (r.root < -1) return fmt::format("invalid root -r {} (-1: all roots)", r.root);
  if (r.threads < 1 || r.gpus < 1 || r.threads * r.gpus > 4096) {
    return fmt::format("invalid -t {} -g {}: ranks per process must be 1 to 4096", r.threads,
                       r.gpus);
  }
  if (r.unalign < 0 || r.unalign > 64) return fmt::format("invalid -u {} (0 to 64)", r.unalign);
  if (r.deviceImpl > 0) {
    return fmt::format("device implementation -D {}: tutti has none (0 only)", r.deviceImpl);
  }
  if (r.stepFactor <= 1 && r.stepBytes == 0 && r.minBytes <= r.maxBytes) {
    return "-i 0 with a step factor of 1 or less never grows the size";
  }
  if (r.stepFactor > 1 && r.minBytes == 0) return "-b 0 with a step factor never grows the size";
  return {};
}

void fillOptions(const Raw& r, BenchOptions& o) {
  o.minBytes = r.minBytes;
  o.maxBytes = r.maxBytes;
  o.stepFactor = r.stepFactor > 1 ? r.stepFactor : 2;
  o.stepBytes = r.stepFactor > 1 ? 0 : r.stepBytes;
  o.iters = static_cast<int>(r.iters);
  o.aggIters = static_cast<int>(r.aggIters);
  o.cycles = static_cast<int>(r.cycles);
  o.aggregate = static_cast<Aggregate>(r.average);
  o.dtypes.clear();
  if (r.type == -1) {
    o.dtypes.assign(kTypeOrder.begin(), kTypeOrder.end());
  } else {
    o.dtypes = {static_cast<tuttiDataType_t>(r.type)};
  }
  o.ops.clear();
  if (r.op == -1) {
    o.ops.assign(kOpOrder.begin(), kOpOrder.end());
  } else {
    o.ops = {static_cast<tuttiRedOp_t>(r.op)};
  }
  o.allRoots = r.root == -1;
  o.root = o.allRoots ? 0 : static_cast<int>(r.root);
  o.misaligned = r.unalign > 0;
  o.unalign = static_cast<int>(r.unalign);
  o.iterationStats = r.perIterTiming == 1;
  o.buffers = r.localRegister ? "registered" : "host";
  o.nccl.threads = static_cast<int>(r.threads);
  o.nccl.gpus = static_cast<int>(r.gpus);
}

}  // namespace

std::optional<std::string> ncclTestsCollective(const std::string& program) {
  for (const auto& p : kPrograms) {
    if (program == p.name) return std::string(p.collective);
  }
  return std::nullopt;
}

std::string programName(const char* argv0) {
  const char* slash = std::strrchr(argv0, '/');
  return slash ? slash + 1 : argv0;
}

NcclTestsParse parseNcclTestsArgs(const std::string& program, int argc, const char* const* argv) {
  NcclTestsParse result;
  BenchOptions& o = result.options;
  o.collective = ncclTestsCollective(program).value_or("");
  o.nccl.program = program;
  o.warmupIters = 1;
  Raw r;
  auto fail = [&](std::string message) {
    result.exitCode = kNcclTestsBadArgs;
    result.message = std::move(message) + "\n";
    return result;
  };
  // getopt_long permutes its argv: give it a copy, and start it afresh (optind = 0).
  std::vector<std::string> storage(argv, argv + argc);
  std::vector<char*> args;
  for (auto& a : storage) args.push_back(a.data());
  args.push_back(nullptr);
  optind = 0;
  for (int c; (c = getopt_long(argc, args.data(), kShortOptions, kLongOptions, nullptr)) != -1;) {
    const char* value = optarg;
    auto size = [&](size_t& out) {
      const double parsed = readSize(value);
      if (parsed < 0) return false;
      out = static_cast<size_t>(parsed);
      return true;
    };
    switch (c) {
      case 't': r.threads = number(value); break;
      case 'g': r.gpus = number(value); break;
      case 'b':
        if (!size(r.minBytes)) return fail("invalid size specified for 'minbytes'");
        break;
      case 'e':
        if (!size(r.maxBytes)) return fail("invalid size specified for 'maxbytes'");
        break;
      case 'i':
        if (!size(r.stepBytes)) return fail("invalid size specified for 'stepBytes'");
        break;
      case 'f': r.stepFactor = static_cast<size_t>(number(value)); break;
      case 'n': r.iters = static_cast<int>(number(value)); break;
      case 'm': r.aggIters = static_cast<int>(number(value)); break;
      case 'w': o.warmupIters = std::max(0, static_cast<int>(number(value))); break;
      case 'N': r.cycles = static_cast<int>(number(value)); break;
      case 'c': o.check = std::max(0, static_cast<int>(number(value))); break;
      case 'o':
        if (std::strcmp(value, "all") == 0) {
          r.op = -1;
        } else if (auto op = parseRedOp(value)) {
          r.op = *op;
        } else {
          r.op = tuttiSum;
          result.notices += fmt::format("invalid op {}, defaulting to sum .. \n", value);
        }
        break;
      case 'd':
        if (std::strcmp(value, "all") == 0) {
          r.type = -1;
        } else if (auto type = parseDataType(value)) {
          r.type = *type;
        } else {
          r.type = tuttiFloat32;
          result.notices += fmt::format("invalid type {}, defaulting to float .. \n", value);
        }
        break;
      case 'r': r.root = number(value); break;
      case 'z': o.blocking = static_cast<int>(number(value)); break;
      case 'T': o.timeoutSeconds = static_cast<double>(number(value)); break;
      case 'C': o.nccl.cpuTime = number(value) != 0; break;
      case 'S': o.nccl.timestamps = number(value) != 0; break;
      case 'J': o.jsonPath = value; break;
      case 'a': r.average = number(value); break;
      case 'R': r.localRegister = number(value); break;
      case 'D': r.deviceImpl = number(value); break;
      case 'M': o.memoryReport = number(value) != 0; break;
      case 'u': r.unalign = number(value); break;
      case 'I': r.perIterTiming = number(value); break;
      case 'K': o.nccl.perIterSkip = static_cast<int>(number(value)); break;
      // No meaning without GPUs or with tutti's one initialisation: read, and left at that.
      case 'p':
      case 'y':
      case 'G':
      case 'x':
      case 'V': break;
      case 'h':
      default:
        result.message =
            (c == 'h' ? "" : fmt::format("invalid option '{}'\n", char(c))) + usage(program);
        return result;
    }
  }
  if (r.minBytes > r.maxBytes) {
    return fail(fmt::format("invalid sizes for 'minbytes' and 'maxbytes': {} > {}", r.minBytes,
                            r.maxBytes));
  }
  if (std::string why = refusal(r); !why.empty()) return fail(program + ": " + why);
  if (o.timeoutSeconds > tutti::cli::kMaxSeconds)
    return fail(fmt::format("{}: invalid timeout -T {:.0f} (at most {:g} seconds)", program,
                            o.timeoutSeconds, tutti::cli::kMaxSeconds));
  // nccl-tests' own corrections, with its words, on stderr.
  if (r.perIterTiming != 0 && r.perIterTiming != 1) {
    o.notes.push_back("per-iteration timing (-I) only supports 0=off or 1=on. Disabling.");
  }
  fillOptions(r, o);
  if (o.nccl.perIterSkip < 0 || o.nccl.perIterSkip >= o.iters) {
    o.notes.push_back(
        fmt::format("per-iteration skip (-K) must be between 0 and {}. Disabling.", o.iters - 1));
    o.nccl.perIterSkip = 0;
  }
  if (o.nccl.perIterSkip && !o.iterationStats) {
    o.notes.push_back("per-iteration skip (-K) requires per-iteration timing (-I 1). Disabling.");
    o.nccl.perIterSkip = 0;
  }
  // nccl-tests has no flag for it: tests corrupt one result through the environment instead.
  if (const char* fault = std::getenv("TUTTI_BENCH_FAULT")) {
    const auto parsed = Fault::parse(fault);
    if (!parsed) return fail(fmt::format("TUTTI_BENCH_FAULT={}: not RANK:INDEX", fault));
    o.fault = *parsed;
  }
  for (int i = 0; i < argc; ++i) {
    o.args.emplace_back(argv[i]);
    o.commandLine += (i ? " " : "") + std::string(argv[i]);
  }
  result.run = true;
  return result;
}

}  // namespace tutti::bench
