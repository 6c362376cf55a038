// The collectives whose output and input differ in size by the world size: allgather and
// reduce-scatter, in their list forms (staged through one flat buffer) and flat "_base" forms.
#include <ATen/ATen.h>

#include "integrations/torch/src/process_group_tutti.hpp"
#include "integrations/torch/src/staging.hpp"
#include "integrations/torch/src/tensor_types.hpp"

namespace tutti_torch {
namespace {

void checkWorldSized(const at::Tensor& large, const at::Tensor& small, int size, const char* op,
                     const char* largeName) {
  checkTensor(large, op);
  checkTensor(small, op);
  checkSameDevice(small, large, op);
  TORCH_CHECK(large.scalar_type() == small.scalar_type(), "tutti: ", op,
              ": the output and input dtypes differ (", large.scalar_type(), ", ",
              small.scalar_type(), ")");
  TORCH_CHECK(large.numel() == small.numel() * size, "tutti: ", op, ": the ", largeName, " has ",
              large.numel(), " elements; it must have world size (", size, ") times ",
              small.numel());
}

template <typename T>
const T& theOnly(const std::vector<T>& list, const char* op, const char* what) {
  TORCH_CHECK(list.size() == 1, "tutti: ", op, " takes one ", what, " per process, got ",
              list.size());
  return list[0];
}

}  // namespace

ProcessGroupTutti::WorkPtr ProcessGroupTutti::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& /*opts*/) {
  const char* op = "allgather";
  const at::Tensor& input = theOnly(inputs, op, "input tensor");
  const std::vector<at::Tensor>& outputList = theOnly(outputs, op, "output list");
  checkTensor(input, op);
  TORCH_CHECK(static_cast<int>(outputList.size()) == size_, "tutti: ", op, ": the output list has ",
              outputList.size(), " tensors, not the world size ", size_);
  checkSameShape(input, outputList, op, "output");
  return run(c10d::OpType::ALLGATHER, op, input.device(), outputList, [&](TuttiWork& work) {
    at::Tensor source = stagedInput(input, work);
    at::Tensor gathered = at::empty({input.numel() * size_}, input.options());
    scatterOnSuccess(gathered, outputList, work);
    return tutti_allgather(source.data_ptr(), gathered.data_ptr(), elementCount(source),
                           dtypeOf(source), comm(), work.requestSlot());
  });
}

// Every rank's inputs packed back to back, one allgather, unpacked into each rank's list (as
// gloo does); the tensors may differ in shape, not in dtype.
ProcessGroupTutti::WorkPtr ProcessGroupTutti::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& outputLists, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& /*opts*/) {
  const char* op = "allgather_coalesced";
  TORCH_CHECK(!inputs.empty(), "tutti: ", op, " got no tensors");
  TORCH_CHECK(static_cast<int>(outputLists.size()) == size_, "tutti: ", op, ": ",
              outputLists.size(), " output lists, not the world size ", size_);
  checkOneDtype(inputs, op);
  std::vector<at::Tensor> outputs;
  for (size_t rank = 0; rank < outputLists.size(); ++rank) {
    const std::vector<at::Tensor>& list = outputLists[rank];
    TORCH_CHECK(list.size() == inputs.size(), "tutti: ", op, ": output list ", rank, " has ",
                list.size(), " tensors for ", inputs.size(), " inputs");
    for (size_t i = 0; i < list.size(); ++i) {
      checkTensor(list[i], op);
      checkSameDevice(inputs[0], list[i], op);
      TORCH_CHECK(
          list[i].scalar_type() == inputs[i].scalar_type() && list[i].numel() == inputs[i].numel(),
          "tutti: ", op, ": output ", i, " of list ", rank, " is ", list[i].numel(), " ",
          list[i].scalar_type(), " for an input of ", inputs[i].numel(), " ",
          inputs[i].scalar_type());
      outputs.push_back(list[i]);
    }
  }
  return run(c10d::OpType::ALLGATHER_COALESCED, op, inputs[0].device(), outputs,
             [&](TuttiWork& work) {
               at::Tensor flat = flattenedInputs(inputs, work);
               at::Tensor gathered = at::empty({flat.numel() * size_}, flat.options());
               scatterOnSuccess(gathered, outputs, work);
               return tutti_allgather(flat.data_ptr(), gathered.data_ptr(), elementCount(flat),
                                      dtypeOf(flat), comm(), work.requestSlot());
             });
}

ProcessGroupTutti::WorkPtr ProcessGroupTutti::_allgather_base(
    at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions& /*opts*/) {
  const char* op = "_allgather_base";
  checkWorldSized(output, input, size_, op, "output");
  return run(c10d::OpType::_ALLGATHER_BASE, op, input.device(), {output}, [&](TuttiWork& work) {
    at::Tensor source = stagedInput(input, work);
    at::Tensor destination = stagedOutput(output, work);
    return tutti_allgather(source.data_ptr(), destination.data_ptr(), elementCount(source),
                           dtypeOf(source), comm(), work.requestSlot());
  });
}

ProcessGroupTutti::WorkPtr ProcessGroupTutti::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  const char* op = "reduce_scatter";
  const at::Tensor& output = theOnly(outputs, op, "output tensor");
  const std::vector<at::Tensor>& inputList = theOnly(inputs, op, "input list");
  checkTensor(output, op);
  TORCH_CHECK(static_cast<int>(inputList.size()) == size_, "tutti: ", op, ": the input list has ",
              inputList.size(), " tensors, not the world size ", size_);
  checkSameShape(output, inputList, op, "input");
  const tuttiRedOp_t reduceOp = toTuttiOp(opts.reduceOp, op);
  return run(c10d::OpType::REDUCE_SCATTER, op, output.device(), outputs, [&](TuttiWork& work) {
    at::Tensor source = flattenedInputs(inputList, work);
    at::Tensor destination = stagedOutput(output, work);
    return tutti_reduce_scatter(source.data_ptr(), destination.data_ptr(),
                                elementCount(destination), dtypeOf(destination), reduceOp, comm(),
                                work.requestSlot());
  });
}

ProcessGroupTutti::WorkPtr ProcessGroupTutti::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  const char* op = "_reduce_scatter_base";
  checkWorldSized(input, output, size_, op, "input");
  const tuttiRedOp_t reduceOp = toTuttiOp(opts.reduceOp, op);
  return run(
      c10d::OpType::_REDUCE_SCATTER_BASE, op, output.device(), {output}, [&](TuttiWork& work) {
        at::Tensor source = stagedInput(input, work);
        at::Tensor destination = stagedOutput(output, work);
        const auto* in = static_cast<const char*>(source.data_ptr());
        auto* out = static_cast<char*>(destination.data_ptr());
        const size_t outBytes = destination.nbytes();
        // NCCL's in place: the output is this rank's block of the input. tutti's in-place
        // form says so with one pointer for both.
        if (out == in + static_cast<size_t>(rank_) * outBytes)
          out = static_cast<char*>(source.data_ptr());
        // Any other overlap (the output at the input's start on rank 1, say) would read as
        // that form, or be refused on this rank alone: a separate output, copied back.
        else if (out < in + source.nbytes() && in < out + outBytes)
          out = static_cast<char*>(stagedSeparately(destination, work).data_ptr());
        return tutti_reduce_scatter(source.data_ptr(), out, elementCount(destination),
                                    dtypeOf(destination), reduceOp, comm(), work.requestSlot());
      });
}

}  // namespace tutti_torch
