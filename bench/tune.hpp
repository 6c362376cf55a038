// tutti-bench tune --ranks N -o FILE|--save: sweeps the fixed all-reduce algorithms over N local
// ranks (tutti-bench allreduce --algo all, its results kept as FILE.json), or reads such a sweep
// (--from JSON), and writes the tuning table its crossovers give (crossovers.hpp) over the table
// in force, for TUTTI_TUNING_FILE (docs/tuning.md); --save writes this machine's table, which
// TUTTI_TUNING_FILE=auto reads (runtime/tuning/machine_tuning.hpp).
#pragma once

#include <string>

namespace tutti::bench {

// argv[1] is "tune"; `self` is this program's path, which the sweep's ranks run. The exit code:
// 0, 1 when the sweep or the file fails, 2 on bad usage.
int runTune(int argc, char** argv, const std::string& self);

}  // namespace tutti::bench
