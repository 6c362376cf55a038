// Tuning tables as files (TUTTI_TUNING_FILE, docs/tuning.md): `key = value` lines, # comments,
// sizes with K/M/G suffixes (powers of 1024), ranges as `least..most`. Keys a file leaves out
// keep tutti's defaults. A bad file is refused whole, with its line and key named.
#pragma once

#include <string>

#include "runtime/tuning/tuning.hpp"

namespace tutti::runtime {

// A table and where it came from: "TUTTI_TUNING_FILE=defaults", "TUTTI_TUNING_FILE=<path>",
// "TUTTI_TUNING_FILE=auto (<path>)", or the defaults with why auto found none.
struct TuningSource {
  Tuning table;
  std::string origin;
  // Auto (TUTTI_TUNING_FILE unset or auto): this machine's table, which init trades for rank 0's
  // (hosts of other CPU models, or with and without a saved table, must plan alike).
  bool fromRank0 = false;
};

// The table `text` gives, over the defaults. An unknown key, a key twice, a malformed or
// out-of-range value, a range whose least exceeds its most: kInvalidArgument "<where>: line N:
// ..." naming the key.
Tuning parseTuning(const std::string& text, const std::string& where);
// A file holding every key of `tuning`, each after a comment with its unit and meaning, the
// whole after `header` (one comment line per line of it).
std::string formatTuningFile(const Tuning& tuning, const std::string& header);
// TUTTI_TUNING_FILE's table: a file's (one that cannot be read or parsed: kInvalidArgument naming
// the variable and the file), tutti's defaults for `defaults`, and unset or `auto` this
// machine's (machine_tuning.hpp) where there is one, else the defaults.
TuningSource tuningInForce();
// Rank 0's table as init sends it to the ranks that take it: its origin, then its file.
std::string encodeTuning(const TuningSource& source);
// Its origin "rank 0's: <rank 0's origin>"; kRemote naming `from` when malformed.
TuningSource decodeTuning(const std::string& text, const std::string& from);

}  // namespace tutti::runtime
