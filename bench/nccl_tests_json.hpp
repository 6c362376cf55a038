// -J under a *_perf name: the results in nccl-tests' JSON schema (its version 3: "config",
// "results" with "out_of_place"/"in_place" and -I's "*_per_iter", "out_of_bounds",
// "average_bus_bandwidth"), so that its tools/analyze_perf_json.py reads tutti's files; what only
// tutti knows sits under "tutti". Field by field in docs/bench-json.md.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "bench/options.hpp"
#include "bench/results.hpp"

namespace tutti::bench {

// As nccl-tests: only a name ending in ".json" (any case) asks for JSON; an existing file is kept
// and FILE.0, FILE.1, ... tried instead. The file is created now, empty, so that the name stays
// ours. `notice` gets the line nccl-tests prints ("# Writing JSON output to ..." or "# skipping
// json output; ... not accessible"). nullopt: no JSON for this run.
std::optional<std::string> reserveNcclJson(const std::string& path, std::string& notice);

// startTime/endTime: "YYYY-MM-DD HH:MM:SS", local time, as nccl-tests writes them.
nlohmann::ordered_json ncclTestsJson(const BenchOptions& options, const Results& results,
                                     const std::string& startTime, const std::string& endTime,
                                     std::optional<double> minBusBw);
std::string ncclJsonTime();  // now, in that form

void writeNcclJson(const std::string& path, const nlohmann::ordered_json& document);

}  // namespace tutti::bench
