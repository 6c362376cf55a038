// tutti-bench's command line: a collective, nccl-tests' flags (-b -e -f -i -n -w -m -c -d -o -r -z
// -a) plus --ranks.
#pragma once

#include <tutti/tutti.h>

#include <cstddef>
#include <string>
#include <vector>

#include "bench/fault.hpp"

namespace tutti::bench {

// Started under an nccl-tests program name (all_reduce_perf, ...): its output, JSON, gates and exit
// codes, with the settings only its flags have.
struct NcclTestsMode {
  std::string program;        // "all_reduce_perf"; empty: tutti-bench SUBCOMMAND
  int threads = 1, gpus = 1;  // -t, -g: ranks per process = threads * gpus
  int perIterSkip = 0;        // -K: leading iterations left out of -I's statistics
  bool cpuTime = false;       // -C 1: the time column is named cputime
  bool timestamps = false;    // -S 1: a timestamp after each row
  explicit operator bool() const { return !program.empty(); }
};

// -a: how each rank's time is combined into the reported one.
enum class Aggregate { kRank0 = 0, kAverage = 1, kMin = 2, kMax = 3 };

// The all-reduce algorithms tutti_comm_set_algorithm takes: what --algo all measures side by
// side and tutti-soak draws from.
extern const std::vector<std::string> kAllReduceAlgorithms;

struct BenchOptions {
  std::string collective;  // a name of collectives()
  size_t minBytes = 8;
  size_t maxBytes = 64 * 1024 * 1024;
  size_t stepFactor = 2;  // used when stepBytes == 0
  size_t stepBytes = 0;   // -i: a fixed increment instead of a factor
  int iters = 20;
  int warmupIters = 5;
  int aggIters = 1;  // -m: operations per iteration, in one group
  int check = 1;     // check iterations per size; 0: no check ("N/A")
  std::vector<tuttiDataType_t> dtypes = {tuttiFloat32};  // -d: one, or all
  std::vector<tuttiRedOp_t> ops = {tuttiSum};            // -o: one, or all
  int root = 0;                                          // -r
  bool allRoots = false;                                 // -r all
  Aggregate aggregate = Aggregate::kAverage;
  int cycles = 1;               // -N: the whole sweep this many times; 0: forever
  int rounds = 1;               // --rounds: each size's column groups measured in turn, K times
  double timeoutSeconds = 0;    // -T: a row that takes longer aborts the run; 0: no limit
  bool misaligned = false;      // -u: buffers start `unalign` elements past a page boundary
  int unalign = 1;              // with misaligned: nccl-tests' -u N sets N
  bool iterationStats = false;  // -I: min, max, p50, p99, CV of the iterations, per placement
  bool memoryReport = false;    // -M: buffer sizes and peak resident memory
  bool quiet = false;           // only the table (no preamble, no notes, no progress)
  bool verbose = false;         // a line per case and per warm-up
  // --algo: the all-reduce algorithms to measure, a column group each (empty: tutti's choice).
  std::vector<std::string> algorithms;
  std::string transport;  // --transport shm|tcp: TUTTI_TRANSPORT for this job (empty: as set)
  std::string buffers = "host";  // --buffers host|registered; "cuda" once --device picks the GPU
  // The tuning table in force on rank 0, as the runtime names it (every rank plans from rank 0's
  // unless TUTTI_TUNING_FILE names a file or `defaults`); empty: not looked up.
  std::string tuning;
  // --device: cpu, cuda (GPU memory, staged by tutti), or auto: cuda where this host has a GPU
  // and --buffers is host, as nccl-tests always runs on GPUs (resolved by resolveDevice).
  std::string device = "auto";
  std::string jsonPath;     // -J: the results as JSON (docs/bench-json.md)
  std::string csvPath;      // --csv
  std::string plotPath;     // --plot: busbw against size, as SVG
  std::string comparePath;  // --compare: a -J file to compare with (a ratio column)
  double minRatio = 0.9;    // --min-ratio: fail when a row's busbw ratio falls below
  double minBusBw = 0;      // --min-busbw: fail when the average busbw (GB/s) is below
  int blocking = 0;         // -z: accepted; every tutti call here completes before returning anyway
  int ranks = 0;            // --ranks N: spawn N local ranks; 0: this process is one rank of a job
  Fault fault;              // --fault RANK:INDEX (tests only): a wrong element for -c to catch
  std::vector<std::string> notes;  // remarks for stderr (sizes rounded down to the type size)
  std::string commandLine;
  std::vector<std::string> args;  // argv as given (-J's "args" under a *_perf name)
  NcclTestsMode nccl;             // started as a *_perf program (docs/nccl-tests.md)
};

// The outcome of parsing: options to run with, or an exit code (0 after --help, 2 on bad input)
// with the text to print (usage included).
struct ParseResult {
  bool run = false;
  BenchOptions options;
  int exitCode = 0;
  std::string message;  // for stderr (stdout for --help)
};

ParseResult parseCommandLine(int argc, const char* const* argv);

// The message sizes of the sweep, in bytes, each a multiple of the type size (rounded down, as
// nccl-tests does): minBytes, then times stepFactor (or plus stepBytes) while <= maxBytes.
std::vector<size_t> sweepSizes(const BenchOptions& options, size_t typeBytes);
// The sizes warmed up before the sweep, -w calls each, rounded down as sweepSizes': the largest and
// the smallest; under a *_perf name every size from -b doubling up to -e, as nccl-tests warms.
std::vector<size_t> warmupSizes(const BenchOptions& options, size_t typeBytes);

// argv without "--ranks N" / "--ranks=N": what each spawned rank runs.
std::vector<std::string> argvWithoutRanks(int argc, const char* const* argv);

}  // namespace tutti::bench
