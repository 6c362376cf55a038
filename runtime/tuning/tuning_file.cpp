#include "runtime/tuning/tuning_file.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "base/config.hpp"
#include "base/error.hpp"
#include "runtime/tuning/machine_tuning.hpp"

namespace tutti::runtime {
namespace {

std::string trimmed(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

std::optional<double> parseNumber(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text.c_str(), &end);
  if (errno != 0 || end == text.c_str() || *end != '\0' || !std::isfinite(value))
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
    raise(ErrorCode::kInvalidArgument, "{}: line {}: {} = {}: {}", where, number, key.name, value,
          why);
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

std::string keyNames() {
  std::string names;
  for (const TuningKey& key : tuningKeys())
    names += fmt::format("{}{}", names.empty() ? "" : ", ", key.name);
  return names;
}

}  // namespace

Tuning parseTuning(const std::string& text, const std::string& where) {
  Tuning tuning = defaultTuning();
  std::map<std::string, int> given;  // key -> its line
  std::istringstream lines(text);
  std::string raw;
  for (int number = 1; std::getline(lines, raw); ++number) {
    const std::string content = trimmed(raw.substr(0, raw.find('#')));
    if (content.empty()) continue;
    const size_t equals = content.find('=');
    if (equals == std::string::npos)
      raise(ErrorCode::kInvalidArgument, "{}: line {}: '{}' is not 'key = value'", where, number,
            content);
    const std::string name = trimmed(content.substr(0, equals));
    const std::string value = trimmed(content.substr(equals + 1));
    const TuningKey* key = findKey(name);
    if (!key)
      raise(ErrorCode::kInvalidArgument, "{}: line {}: unknown key '{}' (the keys: {})", where,
            number, name, keyNames());
    if (const auto [first, fresh] = given.emplace(name, number); !fresh)
      raise(ErrorCode::kInvalidArgument, "{}: line {}: {} is given twice (first on line {})", where,
            number, name, first->second);
    setKey(tuning, {where, number, *key, value});
  }
  return tuning;
}

std::string formatTuningFile(const Tuning& tuning, const std::string& header) {
  std::string out;
  std::istringstream lines(header);
  for (std::string line; std::getline(lines, line);) out += trimmed("# " + line) + "\n";
  for (const TuningKey& key : tuningKeys())
    out += fmt::format("\n# {} ({})\n{} = {}\n", key.doc, key.unit, key.name,
                       formatTuningValue(tuning, key));
  return out;
}

TuningSource tuningInForce() {
  std::string file = config::getString("TUTTI_TUNING_FILE");
  if (file == kDefaultTuning) return {defaultTuning(), "TUTTI_TUNING_FILE=defaults"};
  std::string where = "TUTTI_TUNING_FILE=" + file;
  const bool machine = file.empty() || file == kMachineTuning;
  if (machine) {
    where = file.empty() ? "TUTTI_TUNING_FILE unset (auto)" : "TUTTI_TUNING_FILE=auto";
    file = machineTuningPath();
    std::error_code error;
    if (file.empty() || !std::filesystem::exists(file, error))
      return {
          defaultTuning(),
          fmt::format("defaults ({}: no table for this machine{}; tutti-bench tune --save "
                      "writes one)",
                      where,
                      file.empty() ? " (neither XDG_CACHE_HOME nor HOME is set)" : " at " + file),
          true};
    where += " (" + file + ")";
  }
  std::ifstream in(file);
  if (!in.is_open())
    raise(ErrorCode::kInvalidArgument, "{}: cannot open it: {}", where, std::strerror(errno));
  std::error_code error;
  if (!std::filesystem::is_regular_file(file, error))
    raise(ErrorCode::kInvalidArgument, "{}: not a file", where);
  std::stringstream text;
  text << in.rdbuf();
  return {parseTuning(text.str(), where), where, machine};
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
