// kernels/dtype.cpp: sizes and names of the data types and reduction operations.
#include "kernels/kernels.hpp"
#include "kernels/ops.hpp"

namespace tutti::kernels {

size_t typeSize(DataType dtype) {
  size_t size = 0;
  visitType(dtype, [&]<typename T>() { size = sizeof(T); });
  return size;
}

const char* typeName(DataType dtype) {
  switch (dtype) {
    case DataType::kInt8: return "int8";
    case DataType::kUint8: return "uint8";
    case DataType::kInt32: return "int32";
    case DataType::kUint32: return "uint32";
    case DataType::kInt64: return "int64";
    case DataType::kUint64: return "uint64";
    case DataType::kFloat16: return "float16";
    case DataType::kBfloat16: return "bfloat16";
    case DataType::kFloat32: return "float32";
    case DataType::kFloat64: return "float64";
  }
  return "invalid";
}

const char* opName(RedOp op) {
  switch (op) {
    case RedOp::kSum: return "sum";
    case RedOp::kProd: return "prod";
    case RedOp::kMin: return "min";
    case RedOp::kMax: return "max";
    case RedOp::kAvg: return "avg";
  }
  return "invalid";
}

bool isValid(DataType dtype) {
  return static_cast<int>(dtype) >= 0 && static_cast<int>(dtype) < kNumDataTypes;
}

bool isValid(RedOp op) {
  return static_cast<int>(op) >= 0 && static_cast<int>(op) < kNumRedOps;
}

}  // namespace tutti::kernels
