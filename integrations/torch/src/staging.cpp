#include "integrations/torch/src/staging.hpp"

#include <ATen/ATen.h>

#include "integrations/torch/src/tensor_types.hpp"

namespace tutti_torch {

at::Tensor stagedOutput(const at::Tensor& tensor, TuttiWork& work) {
  if (tensor.is_contiguous()) return tensor;
  at::Tensor staged = tensor.contiguous();
  work.onSuccess([tensor, staged] { tensor.copy_(staged); });
  return staged;
}

at::Tensor stagedInput(const at::Tensor& tensor, TuttiWork& work) {
  at::Tensor staged = tensor.contiguous();
  work.keepAlive(staged);
  return staged;
}

at::Tensor flattenedInputs(at::TensorList tensors, TuttiWork& work) {
  std::vector<at::Tensor> flat;
  flat.reserve(tensors.size());
  for (const at::Tensor& tensor : tensors) flat.push_back(tensor.reshape({-1}));
  at::Tensor joined = at::cat(flat);
  work.keepAlive(joined);
  return joined;
}

void scatterOnSuccess(const at::Tensor& flat, const std::vector<at::Tensor>& outputs,
                      TuttiWork& work) {
  work.onSuccess([flat, outputs] {
    int64_t offset = 0;
    for (const at::Tensor& output : outputs) {
      output.copy_(flat.narrow(0, offset, output.numel()).view_as(output));
      offset += output.numel();
    }
  });
}

size_t elementCount(const at::Tensor& tensor) {
  return static_cast<size_t>(tensor.numel());
}

tuttiDataType_t dtypeOf(const at::Tensor& tensor) {
  return toTuttiType(tensor.scalar_type(), "");
}

}  // namespace tutti_torch
