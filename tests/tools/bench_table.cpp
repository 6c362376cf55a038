#include "bench_table.hpp"

#include <cstdlib>
#include <sstream>

#include "subprocess.hpp"

namespace tutti::test {
namespace {

std::optional<long> integer(const std::string& text) {
  char* end = nullptr;
  long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0') return std::nullopt;
  return value;
}

std::optional<double> number(const std::string& text) {
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0') return std::nullopt;
  return value;
}

// "time algbw busbw #wrong" at fields[first..first+3].
std::optional<Placement> placement(const std::vector<std::string>& f, size_t first) {
  auto time = number(f[first]), algbw = number(f[first + 1]), busbw = number(f[first + 2]);
  if (!time || !algbw || !busbw) return std::nullopt;
  Placement p{*time, *algbw, *busbw, std::nullopt};
  if (f[first + 3] != "N/A") {
    p.wrong = integer(f[first + 3]);
    if (!p.wrong) return std::nullopt;
  }
  return p;
}

}  // namespace

std::optional<TableRow> parseRow(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> f;
  for (std::string field; in >> field;) f.push_back(field);
  if (f.size() != 13) return std::nullopt;
  auto bytes = integer(f[0]), count = integer(f[1]), root = integer(f[4]);
  auto out = placement(f, 5), inPlace = placement(f, 9);
  if (!bytes || !count || !root || !out || !inPlace) return std::nullopt;
  return TableRow{*bytes, *count, f[2], f[3], *root, *out, *inPlace};
}

std::optional<Table> parseTable(const std::string& report) {
  Table table;
  bool sawBounds = false, sawAvg = false;
  for (const auto& line : splitLines(report)) {
    const std::string bounds = "# Out of bounds values : ", avg = "# Avg bus bandwidth    : ";
    if (line.rfind(bounds, 0) == 0) {
      std::istringstream in(line.substr(bounds.size()));
      std::string verdict;
      if (!(in >> table.outOfBounds >> verdict)) return std::nullopt;
      if (verdict != "OK" && verdict != "FAILED") return std::nullopt;
      table.ok = verdict == "OK";
      sawBounds = true;
    } else if (line.rfind(avg, 0) == 0) {
      auto value = number(line.substr(avg.size(), line.find_last_not_of(' ') + 1 - avg.size()));
      if (!value) return std::nullopt;
      table.avgBusBw = *value;
      sawAvg = true;
    } else if (!line.empty() && line[0] != '#') {
      auto row = parseRow(line);
      if (!row) return std::nullopt;
      table.rows.push_back(*row);
    }
  }
  if (!sawBounds || !sawAvg) return std::nullopt;
  return table;
}

}  // namespace tutti::test
