// Environment targets read their input as "NAME=value" lines, which keeps the seeds readable and
// lets the fuzzer splice variables between inputs.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace tutti::fuzz {

// Unsets every variable in `names`, then sets those the input's lines give (a later line wins).
// Lines for other names are ignored: the target must not change the rest of the environment.
inline void setEnvironment(std::string_view input, const std::vector<std::string>& names) {
  for (const std::string& name : names) unsetenv(name.c_str());
  while (!input.empty()) {
    const size_t newline = input.find('\n');
    const std::string_view line = input.substr(0, newline);
    input.remove_prefix(newline == std::string_view::npos ? input.size() : newline + 1);
    const size_t equals = line.find('=');
    if (equals == std::string_view::npos) continue;
    const std::string name(line.substr(0, equals));
    if (std::find(names.begin(), names.end(), name) == names.end()) continue;
    setenv(name.c_str(), std::string(line.substr(equals + 1)).c_str(), 1);
  }
}

}  // namespace tutti::fuzz
