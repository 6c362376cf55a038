// The command line of the *_perf programs (all_reduce_perf, ...), read as nccl-tests reads its own:
// getopt_long over its table of short and long options, numbers through strtol (base 0, trailing
// junk ignored: "-w 50--iters" is 50), sizes through its K/M/G reader, and its defaults. Each
// flag's meaning on tutti is in docs/nccl-tests.md.
#pragma once

#include <string>

#include "bench/options.hpp"

namespace tutti::bench {

// nccl-tests' exit status when its arguments are bad (main returns -1).
constexpr int kNcclTestsBadArgs = 255;

// The tutti collective an nccl-tests program name stands for ("allreduce" for all_reduce_perf),
// or nullopt when `program` is no *_perf name. Throws nothing; a *_perf name tutti has no
// collective for (scatter_perf, ...) gives an empty string.
std::optional<std::string> ncclTestsCollective(const std::string& program);

// argv[0]'s last path component.
std::string programName(const char* argv0);

// Parses argv (argv[0] included) for `program`, a name ncclTestsCollective knows. As nccl-tests:
// -h and an unknown option print the usage on stdout and exit 0 (getopt has named the option on
// stderr); a bad size exits 255 naming it. tutti refuses, also with 255, what nccl-tests would
// run into a hang, a division by zero or a crash (-n 0, -f 1 with -i 0, -a 5, -D 1, ...).
// ParseResult::message goes to stdout when exitCode is 0, else to stderr; `notices` are
// nccl-tests' own remarks while parsing ("invalid type x, defaulting to float .."), for stdout.
struct NcclTestsParse : ParseResult {
  std::string notices;
};
NcclTestsParse parseNcclTestsArgs(const std::string& program, int argc, const char* const* argv);

}  // namespace tutti::bench
