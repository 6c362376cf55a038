// gather and scatter: the root exchanges one block with every rank (its own block included, which
// the exchange copies in issue order), as one tutti group of sends and receives.
#include <ATen/ATen.h>

#include "integrations/torch/src/process_group_tutti.hpp"
#include "integrations/torch/src/staging.hpp"
#include "integrations/torch/src/tensor_types.hpp"

namespace tutti_torch {
namespace {

// The root's list (world size tensors shaped like `own`); other ranks pass none, as torch does.
const std::vector<at::Tensor>& rootList(const std::vector<std::vector<at::Tensor>>& lists,
                                        const at::Tensor& own, bool isRoot, int size,
                                        const char* op, const char* what) {
  static const std::vector<at::Tensor> kNone;
  if (!isRoot) {
    TORCH_CHECK(lists.empty() || (lists.size() == 1 && lists[0].empty()), "tutti: ", op,
                ": only the root takes ", what, " tensors");
    return kNone;
  }
  TORCH_CHECK(lists.size() == 1, "tutti: ", op, " takes one ", what, " list on the root, got ",
              lists.size());
  TORCH_CHECK(static_cast<int>(lists[0].size()) == size, "tutti: ", op, ": the ", what,
              " list has ", lists[0].size(), " tensors, not the world size ", size);
  checkSameShape(own, lists[0], op, what);
  return lists[0];
}

// The root as torch passes it, checked: it indexes this rank's blocks.
int checkedRoot(int64_t root, int size, const char* op) {
  TORCH_CHECK(root >= 0 && root < size, "tutti: ", op, ": root rank ", root,
              " is not a rank of this group of ", size);
  return static_cast<int>(root);
}

}  // namespace

ProcessGroupTutti::WorkPtr ProcessGroupTutti::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::GatherOptions& opts) {
  const char* op = "gather";
  const at::Tensor& input = theOnlyTensor(inputs, op);
  const int root = checkedRoot(opts.rootRank, size_, op);
  const std::vector<at::Tensor>& outputList =
      rootList(outputs, input, root == rank_, size_, op, "output");
  return run(c10d::OpType::GATHER, op, input.device(), outputList, [&](TuttiWork& work) {
    const size_t none = static_cast<size_t>(size_);
    std::vector<PeerBlock> sends(none, {nullptr, 0}), recvs(none, {nullptr, 0});
    at::Tensor source = stagedInput(input, work);
    sends[static_cast<size_t>(root)] = {source.data_ptr(), elementCount(source)};
    for (size_t peer = 0; peer < outputList.size(); ++peer) {
      at::Tensor destination = stagedOutput(outputList[peer], work);
      recvs[peer] = {destination.data_ptr(), elementCount(destination)};
    }
    return exchange(sends, recvs, dtypeOf(source), work);
  });
}

ProcessGroupTutti::WorkPtr ProcessGroupTutti::scatter(std::vector<at::Tensor>& outputs,
                                                      std::vector<std::vector<at::Tensor>>& inputs,
                                                      const c10d::ScatterOptions& opts) {
  const char* op = "scatter";
  at::Tensor& output = theOnlyTensor(outputs, op);
  const int root = checkedRoot(opts.rootRank, size_, op);
  const std::vector<at::Tensor>& inputList =
      rootList(inputs, output, root == rank_, size_, op, "input");
  return run(c10d::OpType::SCATTER, op, output.device(), outputs, [&](TuttiWork& work) {
    const size_t none = static_cast<size_t>(size_);
    std::vector<PeerBlock> sends(none, {nullptr, 0}), recvs(none, {nullptr, 0});
    at::Tensor destination = stagedOutput(output, work);
    recvs[static_cast<size_t>(root)] = {destination.data_ptr(), elementCount(destination)};
    for (size_t peer = 0; peer < inputList.size(); ++peer) {
      at::Tensor source = stagedInput(inputList[peer], work);
      sends[peer] = {source.data_ptr(), elementCount(source)};
    }
    return exchange(sends, recvs, dtypeOf(destination), work);
  });
}

}  // namespace tutti_torch
