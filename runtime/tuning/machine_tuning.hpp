// This machine's own tuning table, which TUTTI_TUNING_FILE unset or auto reads: a file per CPU
// model in the user's cache directory, which `tutti-bench tune --save` writes (and `tutti-dev
// bench` at its first run on a machine) and anyone may read or delete. Without the file, auto means
// the defaults. A machine with another CPU model looks for another file, so a table never outlives
// the hardware it was measured on.
#pragma once

#include <string>

namespace tutti::runtime {

// TUTTI_TUNING_FILE's words for this machine's table (what unset means too) and tutti's own.
inline constexpr char kMachineTuning[] = "auto";
inline constexpr char kDefaultTuning[] = "defaults";

// /proc/cpuinfo's first model name ("unknown" without one).
std::string cpuModel();
// $XDG_CACHE_HOME/tutti/tuning-<CPU model, letters and digits, the rest as '-'>, with
// $HOME/.cache where XDG_CACHE_HOME is unset, empty or relative (the XDG spec's invalid); "" where
// neither gives a place.
std::string machineTuningPath();

}  // namespace tutti::runtime
