// -J and --compare: the results as JSON (schema: docs/bench-json.md) and back; --csv.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "bench/options.hpp"
#include "bench/results.hpp"

namespace tutti::bench {

nlohmann::json toJson(const BenchOptions& options, const Results& results);
// The machine, rows and summary of a document toJson wrote. Throws std::runtime_error naming
// what is missing or malformed.
Results resultsFromJson(const nlohmann::json& document);

void writeJson(const std::string& path, const BenchOptions& options, const Results& results);
Results readJson(const std::string& path);  // throws std::runtime_error
// One line per row, column group and placement, with a header line.
void writeCsv(const std::string& path, const Results& results);

}  // namespace tutti::bench
