// A reader of nccl-tests' report, written against its format (as the scrapers people run on
// all_reduce_perf output do): data rows of exactly 13 fields, then the footer lines.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tutti::test {

struct Placement {
  double timeUs = 0, algbw = 0, busbw = 0;
  std::optional<long> wrong;  // nullopt: "N/A"
};

struct TableRow {
  long bytes = 0, count = 0;
  std::string type, op;
  long root = 0;
  Placement outOfPlace, inPlace;
};

struct Table {
  std::vector<TableRow> rows;
  long outOfBounds = -1;  // "# Out of bounds values : N OK|FAILED"
  bool ok = false;        // ... OK
  double avgBusBw = -1;   // "# Avg bus bandwidth    : X"
};

// nullopt when a line that is not a comment is not a well-formed row, or a footer line is missing.
std::optional<TableRow> parseRow(const std::string& line);
std::optional<Table> parseTable(const std::string& report);

}  // namespace tutti::test
