// Tensors as tutti sees them: contiguous memory and an element count. A non-contiguous output is
// worked on in a contiguous copy that the work copies back when it succeeds; inputs are made
// contiguous and kept alive by the work until tutti is done with them.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>

#include "integrations/torch/src/tutti_work.hpp"
#include "tutti/tutti.h"

namespace tutti_torch {

at::Tensor stagedOutput(const at::Tensor& tensor, TuttiWork& work);
// A contiguous copy of its own that the work copies back into `tensor` when it succeeds.
at::Tensor stagedSeparately(const at::Tensor& tensor, TuttiWork& work);
at::Tensor stagedInput(const at::Tensor& tensor, TuttiWork& work);
// Inputs concatenated into one flat contiguous tensor (kept alive by the work).
at::Tensor flattenedInputs(at::TensorList tensors, TuttiWork& work);
// Copies flat's consecutive slices into outputs when the work succeeds.
void scatterOnSuccess(const at::Tensor& flat, const std::vector<at::Tensor>& outputs,
                      TuttiWork& work);

size_t elementCount(const at::Tensor& tensor);
tuttiDataType_t dtypeOf(const at::Tensor& tensor);

}  // namespace tutti_torch
