// Every TUTTI_* environment variable, in one typed table: name, type, default, limits, doc.
// A bad value is an error naming the variable; an unknown TUTTI_* variable draws one warning.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tutti::config {

// TUTTI_TIMEOUT's largest value, a week: also the bound of a communicator's own timeout.
inline constexpr int64_t kTimeoutMaxSeconds = 86400 * 7;

enum class Type { kString, kInt, kBytes, kChoice };

struct Var {
  const char* name;
  Type type;
  const char* defaultValue;  // "" = unset
  const char* choices;       // kChoice: values separated by '|'
  int64_t min;               // kInt, kBytes
  int64_t max;
  const char* doc;
};

const std::vector<Var>& table();
const Var& find(const std::string& name);  // throws kInternal for a name not in the table

// The variable's value, validated, or its default. Throws kInvalidArgument naming the variable.
std::string getString(const std::string& name);
int64_t getInt(const std::string& name);  // kInt and kBytes (K/M/G suffixes, powers of 1024)
bool isSet(const std::string& name);

// Parses "64K", "1M", "3G", "4096"; nullopt when malformed.
std::optional<int64_t> parseBytes(const std::string& text);

// Validates every set TUTTI_* variable and warns (once per process) about unknown ones.
void validateAll();

}  // namespace tutti::config
