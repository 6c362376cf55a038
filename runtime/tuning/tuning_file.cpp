#include "runtime/tuning/tuning_file.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

#include "base/config.hpp"
#include "base/error.hpp"
#include "base/regular_file.hpp"
#include "runtime/tuning/machine_tuning.hpp"

namespace tutti::runtime {
namespace {

// Part of a line as an error quotes it: printable, and short, whatever the file holds (a binary
// file's escape sequences reached the terminal, a NUL cut the message, a long line filled it).
std::string quoted(const std::string& text) {
  constexpr size_t kShown = 60;
  std::string shown;
  for (const char c : text.substr(0, kShown))
    shown += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
  return text.size() > kShown ? shown + "..." : shown;
}

std::string trimmed(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

// A finite number, zero or normal: a subnormal one (hex text reaches them without an error)
// would be written back in decimal, which strtod refuses, so ranks taking rank 0's table would
// fail on what rank 0 accepted.
std::optional<double> parseNumber(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text.c_str(), &end);
  if (errno != 0 || end == text.c_str() || *end != '\0' || !std::isfinite(value) ||
      std::fpclassify(value) == FP_SUBNORMAL)
    return std::nullopt;
  return value;
}

// Where a line of the file went wrong: everything the error needs to name it.
struct Line {
  const std::string& where;
  int number;
  const TuningKey& key;
  const std::string& value;

  [[noreturn]] void refuse(const std::string& why) const {
    raise(ErrorCode::kInvalidArgument, "{}: line {}: {} = {}: {}", where, number, key.name,
          quoted(value), why);
  }
  size_t size(const std::string& text) const {
    const bool count = std::string_view(key.unit) == "count";
    std::optional<int64_t> parsed = config::parseBytes(text);
    if (!parsed || (count && text.find_first_not_of("0123456789") != std::string::npos))
      refuse(count ? "not a whole number" : "not a size (e.g. 4096, 64K, 8M)");
    inRange(double(*parsed));
    return static_cast<size_t>(*parsed);
  }
  void inRange(double value) const {
    if (value >= key.min && value <= key.max) return;
    auto bound = [this](double limit) {
      return std::string_view(key.unit) == "bytes" ? formatBytes(static_cast<size_t>(limit))
                                                   : fmt::format("{:g}", limit);
    };
    refuse(fmt::format("out of range [{}, {}] {}", bound(key.min), bound(key.max), key.unit));
  }
};

void setKey(Tuning& tuning, const Line& line) {
  if (const auto* size = std::get_if<size_t Tuning::*>(&line.key.field)) {
    tuning.*(*size) = line.size(line.value);
  } else if (const auto* real = std::get_if<double Tuning::*>(&line.key.field)) {
    const std::optional<double> value = parseNumber(line.value);
    if (!value) line.refuse("not a number");
    line.inRange(*value);
    tuning.*(*real) = *value;
  } else {
    const size_t dots = line.value.find("..");
    if (dots == std::string::npos) line.refuse("not a range of sizes (e.g. 256K..8M)");
    const SizeRange range{line.size(trimmed(line.value.substr(0, dots))),
                          line.size(trimmed(line.value.substr(dots + 2)))};
    if (range.least > range.most) line.refuse("its least size exceeds its most");
    tuning.*std::get<SizeRange Tuning::*>(line.key.field) = range;
  }
}

const TuningKey* findKey(const std::string& name) {
  for (const TuningKey& key : tuningKeys())
    if (name == key.name) return &key;
  return nullptr;
}

int mostRanks() {
  return static_cast<int>(config::find("TUTTI_WORLD_SIZE").max);
}

// N of a "[ranks N]" line; nullopt for anything else.
std::optional<int> sectionRanks(const std::string& content) {
  if (content.back() != ']') return std::nullopt;
  std::istringstream words(content.substr(1, content.size() - 2));
  std::string word, rest;
  long ranks = 0;
  if (!(words >> word >> ranks) || word != "ranks" || words >> rest || ranks < 1 ||
      ranks > mostRanks())
    return std::nullopt;
  return static_cast<int>(ranks);
}

std::string keyNames() {
  std::string names;
  for (const TuningKey& key : tuningKeys())
    names += fmt::format("{}{}", names.empty() ? "" : ", ", key.name);
  return names;
}

}  // namespace

TuningTable parseTuning(const std::string& text, const std::string& where) {
  // The lines of the part before any section (rank count 0), then of each [ranks N] section.
  struct Assignment {
    int number;
    const TuningKey* key;
    std::string value;
  };
  std::map<int, std::vector<Assignment>> parts{{0, {}}};
  std::map<int, int> sectionLine;    // rank count -> the line of its header
  std::map<std::string, int> given;  // key -> its line, in the current part
  int section = 0;
  std::istringstream lines(text);
  std::string raw;
  for (int number = 1; std::getline(lines, raw); ++number) {
    const std::string content = trimmed(raw.substr(0, raw.find('#')));
    if (content.empty()) continue;
    if (content.front() == '[') {
      const std::optional<int> ranks = sectionRanks(content);
      if (!ranks)
        raise(ErrorCode::kInvalidArgument,
              "{}: line {}: '{}' is not a section of a rank count, [ranks N] with N from 1 to {}",
              where, number, quoted(content), mostRanks());
      if (const auto [first, fresh] = sectionLine.emplace(*ranks, number); !fresh)
        raise(ErrorCode::kInvalidArgument,
              "{}: line {}: [ranks {}] is given twice (first on line {})", where, number, *ranks,
              first->second);
      section = *ranks;
      parts[section];
      given.clear();
      continue;
    }
    const size_t equals = content.find('=');
    if (equals == std::string::npos)
      raise(ErrorCode::kInvalidArgument, "{}: line {}: '{}' is not 'key = value'", where, number,
            quoted(content));
    const std::string name = trimmed(content.substr(0, equals));
    const TuningKey* key = findKey(name);
    if (!key)
      raise(ErrorCode::kInvalidArgument, "{}: line {}: unknown key '{}' (the keys: {})", where,
            number, quoted(name), keyNames());
    if (const auto [first, fresh] = given.emplace(name, number); !fresh)
      raise(ErrorCode::kInvalidArgument, "{}: line {}: {} is given twice (first on line {})", where,
            number, name, first->second);
    parts[section].push_back({number, key, trimmed(content.substr(equals + 1))});
  }
  TuningTable table;
  for (const auto& [ranks, assignments] : parts) {
    Tuning& tuning = ranks == 0 ? table.any : (table.byRanks[ranks] = table.any);
    for (const Assignment& line : assignments)
      setKey(tuning, {where, line.number, *line.key, line.value});
  }
  return table;
}

std::string formatTuningFile(const TuningTable& table, const std::string& header) {
  std::string out;
  std::istringstream lines(header);
  for (std::string line; std::getline(lines, line);) out += trimmed("# " + line) + "\n";
  for (const TuningKey& key : tuningKeys())
    out += fmt::format("\n# {} ({})\n{} = {}\n", key.doc, key.unit, key.name,
                       formatTuningValue(table.any, key));
  for (const auto& [ranks, tuning] : table.byRanks) {
    out += fmt::format(
        "\n# communicators of {} ranks and more, up to the next section: these keys over those "
        "before any section\n[ranks {}]\n",
        ranks, ranks);
    for (const TuningKey& key : tuningKeys())
      if (const std::string value = formatTuningValue(tuning, key);
          value != formatTuningValue(table.any, key))
        out += fmt::format("{} = {}\n", key.name, value);
  }
  return out;
}

TuningSource tuningInForce() {
  std::string file = config::getString("TUTTI_TUNING_FILE");
  if (file == kDefaultTuning) return {TuningTable{}, "TUTTI_TUNING_FILE=defaults"};
  std::string where = "TUTTI_TUNING_FILE=" + file;
  const bool machine = file.empty() || file == kMachineTuning;
  if (machine) {
    where = file.empty() ? "TUTTI_TUNING_FILE unset (auto)" : "TUTTI_TUNING_FILE=auto";
    file = machineTuningPath();
    std::error_code error;
    if (file.empty() || !std::filesystem::exists(file, error))
      return {TuningTable{},
              fmt::format("defaults ({}: no table for this machine{}; tutti-bench tune --save "
                          "writes one)",
                          where,
                          file.empty() ? " (neither an absolute XDG_CACHE_HOME nor HOME is set)"
                                       : " at " + file),
              true};
    where += " (" + file + ")";
  }
  return {readTuningFile(file, where), where, machine};
}

TuningTable readTuningFile(const std::string& path, const std::string& where) {
  return parseTuning(readRegularFile(path, where), where);
}

std::string encodeTuning(const TuningSource& source) {
  return source.origin + "\n" + formatTuningFile(source.table, "");
}

TuningSource decodeTuning(const std::string& text, const std::string& from) {
  const size_t newline = text.find('\n');
  if (newline == std::string::npos) raise(ErrorCode::kRemote, "{}: no tuning table", from);
  try {
    return {parseTuning(text.substr(newline + 1), from), "rank 0's: " + text.substr(0, newline),
            true};
  } catch (const Error& error) {
    raise(ErrorCode::kRemote, "{}", error.what());
  }
}

}  // namespace tutti::runtime
