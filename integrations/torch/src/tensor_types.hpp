// Torch's dtypes and reduce ops in tutti's terms, and the checks every tensor passes before tutti
// sees its memory: a clear error here is better than a wrong answer or a hang on another rank.
#pragma once

#include <ATen/core/Tensor.h>

#include <torch/csrc/distributed/c10d/Types.hpp>

#include "tutti/tutti.h"

namespace tutti_torch {

tuttiDataType_t toTuttiType(at::ScalarType type, const char* op);
tuttiRedOp_t toTuttiOp(const c10d::ReduceOp& reduceOp, const char* op);
// Throws (naming op) unless tensor is a dense CPU or CUDA tensor of a type tutti can move.
void checkTensor(const at::Tensor& tensor, const char* op);
// Throws (naming op and both devices) unless tensor is on first's device: tutti takes one kind of
// memory per call, and a group's CUDA tensors on one GPU.
void checkSameDevice(const at::Tensor& first, const at::Tensor& tensor, const char* op);
// The single tensor of a list, checked: torch passes one tensor per process to CPU backends (lists
// of several are the deprecated multi-GPU forms).
at::Tensor& theOnlyTensor(std::vector<at::Tensor>& tensors, const char* op);
// checkTensor for each, and all of one dtype and device (the packed forms: *_coalesced).
void checkOneDtype(at::TensorList tensors, const char* op);
// checkTensor for each, and all of the same dtype, element count and device as reference.
void checkSameShape(const at::Tensor& reference, at::TensorList tensors, const char* op,
                    const char* what);

}  // namespace tutti_torch
