// Data types and reduction operations as tutti-bench names them (nccl-tests' names, so that
// scripts written for all_reduce_perf work unchanged).
#pragma once

#include <tutti/tutti.h>

#include <cstddef>
#include <optional>
#include <string>

namespace tutti::bench {

// "int8" "uint8" "int32" "uint32" "int64" "uint64" "half" "bfloat16" "float" "double"; also
// "float16", "float32", "float64" (and nccl-tests' "fp16"/"fp32"/"fp64"/"bf16").
std::optional<tuttiDataType_t> parseDataType(const std::string& name);
std::optional<tuttiRedOp_t> parseRedOp(const std::string& name);  // sum prod min max avg

const char* typeName(tuttiDataType_t dtype);  // the canonical (first) name above
const char* opName(tuttiRedOp_t op);
size_t typeSize(tuttiDataType_t dtype);
bool isFloatingPoint(tuttiDataType_t dtype);

// Sizes as nccl-tests reads them: a number (decimals allowed) with an optional K, M or G suffix
// (powers of 1024, either case); the result is truncated to whole bytes.
std::optional<size_t> parseSize(const std::string& text);

}  // namespace tutti::bench
