#include "integrations/torch/src/staging.hpp"

#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>

#include "integrations/torch/src/tensor_types.hpp"

namespace tutti_torch {

at::Tensor stagedOutput(const at::Tensor& tensor, TuttiWork& work) {
  // Checked before any data moves: copying the result back would fail only after the collective.
  TORCH_CHECK(at::has_internal_overlap(tensor) != at::MemOverlap::Yes,
              "tutti: an output tensor has elements that share memory (made by expand()?); pass "
              "one whose elements each have their own, e.g. its clone()");
  if (tensor.is_contiguous()) return tensor;
  return stagedSeparately(tensor, work);
}

at::Tensor stagedSeparately(const at::Tensor& tensor, TuttiWork& work) {
  at::Tensor staged = tensor.clone(at::MemoryFormat::Contiguous);  // in-place ops read it
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
