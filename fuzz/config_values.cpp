// The typed TUTTI_* table (base/config.hpp) on hostile values: every variable the input sets is
// read back through getString and, for integers and sizes, getInt. A value is refused with
// kInvalidArgument or accepted within the table's limits; sizes agree with parseBytes.
#include <cstdint>

#include "base/config.hpp"
#include "fuzz/env_lines.hpp"
#include "fuzz/fuzz_support.hpp"

namespace {

using namespace tutti;

std::vector<std::string> tableNames() {
  std::vector<std::string> names;
  for (const config::Var& var : config::table()) names.emplace_back(var.name);
  return names;
}

void checkVariable(const config::Var& var) {
  const ErrorCode refusal = ErrorCode::kInvalidArgument;
  std::string text;
  if (!fuzz::accepts(refusal, [&] { text = config::getString(var.name); })) return;
  if (var.type != config::Type::kInt && var.type != config::Type::kBytes) return;
  int64_t value = 0;
  if (!fuzz::accepts(refusal, [&] { value = config::getInt(var.name); })) return;
  if (value < var.min || value > var.max) fuzz::bug(std::string(var.name) + " out of its range");
  if (var.type == config::Type::kBytes && config::parseBytes(text) != value)
    fuzz::bug(std::string(var.name) + " read as another size than parseBytes gives");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::discardLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<std::string> names = tableNames();
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  fuzz::setEnvironment(input, names);
  for (const config::Var& var : config::table())
    if (config::isSet(var.name)) checkVariable(var);
  // parseBytes on the raw input too: it is not limited to what the environment can hold.
  if (const auto bytes = config::parseBytes(std::string(input)); bytes && *bytes < 0)
    fuzz::bug("parseBytes returned a negative size");
  return 0;
}
