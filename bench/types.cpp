#include "bench/types.hpp"

#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>

namespace tutti::bench {
namespace {

struct TypeEntry {
  tuttiDataType_t dtype;
  const char* name;
  size_t size;
  bool floating;
};

constexpr std::array<TypeEntry, tuttiNumTypes> kTypes = {{
    {tuttiInt8, "int8", 1, false},
    {tuttiUint8, "uint8", 1, false},
    {tuttiInt32, "int32", 4, false},
    {tuttiUint32, "uint32", 4, false},
    {tuttiInt64, "int64", 8, false},
    {tuttiUint64, "uint64", 8, false},
    {tuttiFloat16, "half", 2, true},
    {tuttiBfloat16, "bfloat16", 2, true},
    {tuttiFloat32, "float", 4, true},
    {tuttiFloat64, "double", 8, true},
}};

constexpr std::array<const char*, tuttiNumOps> kOps = {"sum", "prod", "min", "max", "avg"};

const TypeEntry* find(tuttiDataType_t dtype) {
  for (const auto& entry : kTypes) {
    if (entry.dtype == dtype) return &entry;
  }
  return nullptr;
}

}  // namespace

std::optional<tuttiDataType_t> parseDataType(const std::string& name) {
  for (const auto& entry : kTypes) {
    if (name == entry.name) return entry.dtype;
  }
  if (name == "float16" || name == "fp16") return tuttiFloat16;
  if (name == "bf16") return tuttiBfloat16;
  if (name == "float32" || name == "fp32") return tuttiFloat32;
  if (name == "float64" || name == "fp64") return tuttiFloat64;
  return std::nullopt;
}

std::optional<tuttiRedOp_t> parseRedOp(const std::string& name) {
  for (size_t i = 0; i < kOps.size(); ++i) {
    if (name == kOps[i]) return static_cast<tuttiRedOp_t>(i);
  }
  return std::nullopt;
}

const char* typeName(tuttiDataType_t dtype) {
  const TypeEntry* entry = find(dtype);
  return entry ? entry->name : "invalid";
}

const char* opName(tuttiRedOp_t op) {
  return op >= 0 && op < tuttiNumOps ? kOps[static_cast<size_t>(op)] : "invalid";
}

size_t typeSize(tuttiDataType_t dtype) {
  const TypeEntry* entry = find(dtype);
  return entry ? entry->size : 0;
}

bool isFloatingPoint(tuttiDataType_t dtype) {
  const TypeEntry* entry = find(dtype);
  return entry && entry->floating;
}

std::optional<size_t> parseSize(const std::string& text) {
  if (text.empty() || !(std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '.')) {
    return std::nullopt;
  }
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  double unit = 1;
  if (*end != '\0') {
    switch (std::tolower(static_cast<unsigned char>(*end))) {
      case 'k': unit = 1024.0; break;
      case 'm': unit = 1024.0 * 1024; break;
      case 'g': unit = 1024.0 * 1024 * 1024; break;
      default: return std::nullopt;
    }
    if (end[1] != '\0') return std::nullopt;
  }
  double bytes = value * unit;
  if (!std::isfinite(bytes) || bytes < 0 || bytes > 0x1p62) return std::nullopt;
  return static_cast<size_t>(bytes);
}

}  // namespace tutti::bench
