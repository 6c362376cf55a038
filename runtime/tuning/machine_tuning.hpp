// This machine's own tuning table, for TUTTI_TUNING_FILE=auto: a file per CPU model in the
// user's cache directory, which `tutti-bench tune --save` writes and anyone may read or delete.
// Nothing measures on its own: without the file, auto means the defaults. A machine with another
// CPU model looks for another file, so a table never outlives the hardware it was measured on.
#pragma once

#include <string>

namespace tutti::runtime {

// TUTTI_TUNING_FILE's word for this machine's table.
inline constexpr char kMachineTuning[] = "auto";

// /proc/cpuinfo's first model name ("unknown" without one).
std::string cpuModel();
// $XDG_CACHE_HOME/tutti/tuning-<CPU model, letters and digits, the rest as '-'>, with
// $HOME/.cache where XDG_CACHE_HOME is unset or empty; "" where neither is set.
std::string machineTuningPath();

}  // namespace tutti::runtime
