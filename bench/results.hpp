// What a run measured, kept on rank 0 for -J, --csv, --compare and --plot: one entry per row of the
// table and column group (algorithm), both placements, and the summary.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/report.hpp"

namespace tutti::bench {

struct ResultRow {
  std::string collective;
  std::string algorithm;  // --algo's name, or "auto" (the runtime's choice)
  size_t bytes = 0;
  size_t count = 0;
  std::string type, op;  // op: "none" for collectives that do not reduce
  int root = -1;
  Measurement outOfPlace, inPlace;
};

struct Results {
  int nranks = 0;
  std::vector<RankInfo> ranks;
  int cores = 0;  // rank 0's hardware threads
  std::vector<std::string> transports;
  std::vector<ResultRow> rows;
  double avgBusBw = 0;
  int64_t failedChecks = 0;
};

// The entry of `rows` measuring the same thing as `row` (collective, algorithm, size, type, op,
// root), or nullptr.
const ResultRow* findMatch(const std::vector<ResultRow>& rows, const ResultRow& row);

}  // namespace tutti::bench
