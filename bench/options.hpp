// tutti-bench's command line: nccl-tests' flags (-b -e -f -i -n -w -c -d -o -z) plus --ranks.
#pragma once

#include <tutti/tutti.h>

#include <cstddef>
#include <string>
#include <vector>

namespace tutti::bench {

struct BenchOptions {
  std::string collective;  // "allreduce"
  size_t minBytes = 8;
  size_t maxBytes = 64 * 1024 * 1024;
  size_t stepFactor = 2;  // used when stepBytes == 0
  size_t stepBytes = 0;   // -i: a fixed increment instead of a factor
  int iters = 20;
  int warmupIters = 5;
  int check = 1;  // check iterations per size; 0: no check ("N/A")
  tuttiDataType_t dtype = tuttiFloat32;
  tuttiRedOp_t op = tuttiSum;
  int blocking = 0;  // -z: accepted; every tutti call here completes before returning anyway
  int ranks = 0;     // --ranks N: spawn N local ranks; 0: this process is one rank of a job
  std::vector<std::string> notes;  // remarks for stderr (sizes rounded down to the type size)
  std::string commandLine;
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
std::vector<size_t> sweepSizes(const BenchOptions& options);

// argv without "--ranks N" / "--ranks=N": what each spawned rank runs.
std::vector<std::string> argvWithoutRanks(int argc, const char* const* argv);

}  // namespace tutti::bench
