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
  TuningTable table;
  std::string origin;
  // Auto (TUTTI_TUNING_FILE unset or auto): this machine's table, which init trades for rank 0's
  // (hosts of other CPU models, or with and without a saved table, must plan alike).
  bool fromRank0 = false;
};

// The table `text` gives, over the defaults: `key = value` lines for every rank count, then
// optional `[ranks N]` sections whose keys apply, over those, to communicators of N ranks and
// more (up to the next section). An unknown key, a key twice in a part, a malformed or
// out-of-range value, a range whose least exceeds its most, a malformed section or one twice:
// kInvalidArgument "<where>: line N: ..." naming the key or the section.
TuningTable parseTuning(const std::string& text, const std::string& where);
// A file holding every key of `table.any`, each after a comment with its unit and meaning, then
// each section with the keys where it differs, the whole after `header` (one comment line per
// line of it).
std::string formatTuningFile(const TuningTable& table, const std::string& header);
// TUTTI_TUNING_FILE's table: a file's (one that cannot be read or parsed: kInvalidArgument naming
// the variable and the file), tutti's defaults for `defaults`, and unset or `auto` this
// machine's (machine_tuning.hpp) where there is one, else the defaults.
TuningSource tuningInForce();
// The file's table (kInvalidArgument naming `where` when it cannot be read or parsed).
TuningTable readTuningFile(const std::string& path, const std::string& where);
// Rank 0's table as init sends it to the ranks that take it: its origin, then its file.
std::string encodeTuning(const TuningSource& source);
// Its origin "rank 0's: <rank 0's origin>"; kRemote naming `from` when malformed.
TuningSource decodeTuning(const std::string& text, const std::string& from);

}  // namespace tutti::runtime
