#include "integrations/torch/src/tensor_types.hpp"

#include <c10/util/Exception.h>

namespace tutti_torch {

tuttiDataType_t toTuttiType(at::ScalarType type, const char* op) {
  switch (type) {
    case at::kHalf: return tuttiFloat16;
    case at::kBFloat16: return tuttiBfloat16;
    case at::kFloat: return tuttiFloat32;
    case at::kDouble: return tuttiFloat64;
    case at::kChar: return tuttiInt8;
    case at::kByte: return tuttiUint8;
    case at::kInt: return tuttiInt32;
    case at::kLong: return tuttiInt64;
    default:
      TORCH_CHECK(false, "tutti: ", op, " does not support dtype ", type,
                  " (supported: float16, bfloat16, float32, float64, int8, uint8, int32, int64)");
  }
}

tuttiRedOp_t toTuttiOp(const c10d::ReduceOp& reduceOp, const char* op) {
  switch (static_cast<c10d::ReduceOp::RedOpType>(reduceOp)) {
    case c10d::ReduceOp::SUM: return tuttiSum;
    case c10d::ReduceOp::PRODUCT: return tuttiProd;
    case c10d::ReduceOp::MIN: return tuttiMin;
    case c10d::ReduceOp::MAX: return tuttiMax;
    case c10d::ReduceOp::AVG: return tuttiAvg;
    default:
      TORCH_CHECK(false, "tutti: ", op,
                  " supports ReduceOp SUM, PRODUCT, MIN, MAX and AVG; not bitwise or PREMUL_SUM");
  }
}

void checkTensor(const at::Tensor& tensor, const char* op) {
  TORCH_CHECK(tensor.defined(), "tutti: ", op, " got an undefined tensor");
  TORCH_CHECK(tensor.device().is_cpu() || tensor.device().is_cuda(), "tutti: ", op,
              " supports CPU and CUDA tensors only; got a tensor on ", tensor.device());
  TORCH_CHECK(tensor.layout() == at::kStrided, "tutti: ", op,
              " supports dense tensors only; got layout ", tensor.layout());
  toTuttiType(tensor.scalar_type(), op);
}

void checkSameDevice(const at::Tensor& first, const at::Tensor& tensor, const char* op) {
  TORCH_CHECK(tensor.device() == first.device(), "tutti: ", op,
              " needs all its tensors on one device; got ", first.device(), " and ",
              tensor.device());
}

at::Tensor& theOnlyTensor(std::vector<at::Tensor>& tensors, const char* op) {
  TORCH_CHECK(tensors.size() == 1, "tutti: ", op, " takes one tensor per process, got ",
              tensors.size());
  checkTensor(tensors[0], op);
  return tensors[0];
}

void checkOneDtype(at::TensorList tensors, const char* op) {
  for (const at::Tensor& tensor : tensors) {
    checkTensor(tensor, op);
    checkSameDevice(tensors[0], tensor, op);
    TORCH_CHECK(tensor.scalar_type() == tensors[0].scalar_type(), "tutti: ", op,
                " needs tensors of one dtype; got ", tensors[0].scalar_type(), " and ",
                tensor.scalar_type());
  }
}

void checkSameShape(const at::Tensor& reference, at::TensorList tensors, const char* op,
                    const char* what) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor& tensor = tensors[i];
    checkTensor(tensor, op);
    checkSameDevice(reference, tensor, op);
    TORCH_CHECK(tensor.scalar_type() == reference.scalar_type(), "tutti: ", op, ": ", what, "[", i,
                "] is ", tensor.scalar_type(), " but the input is ", reference.scalar_type());
    TORCH_CHECK(tensor.numel() == reference.numel(), "tutti: ", op, ": ", what, "[", i, "] has ",
                tensor.numel(), " elements but the input has ", reference.numel());
  }
}

}  // namespace tutti_torch
