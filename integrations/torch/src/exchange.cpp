// Point to point (from one rank or any) and all-to-all. Equal all-to-all splits are tutti_alltoall;
// unequal splits and the list form are one tutti group of sends and receives (which cannot
// deadlock, and which includes this rank's block to itself, so that it too is copied in issue
// order).
#include <ATen/ATen.h>

#include <algorithm>
#include <numeric>

#include "integrations/torch/src/process_group_tutti.hpp"
#include "integrations/torch/src/staging.hpp"
#include "integrations/torch/src/tensor_types.hpp"

namespace tutti_torch {
namespace {

// Rows (along dim 0) per rank: the split sizes as given, or equal ones when torch passes none.
std::vector<int64_t> rowsPerRank(const at::Tensor& tensor, const std::vector<int64_t>& splits,
                                 int size, const char* op, const char* what) {
  const int64_t rows = tensor.dim() == 0 ? 1 : tensor.size(0);
  if (splits.empty()) {
    TORCH_CHECK(rows % size == 0, "tutti: ", op, ": the ", what, " has ", rows,
                " rows, not divisible by the world size ", size, " (pass split sizes)");
    return std::vector<int64_t>(static_cast<size_t>(size), rows / size);
  }
  TORCH_CHECK(static_cast<int>(splits.size()) == size, "tutti: ", op, ": ", splits.size(), " ",
              what, " split sizes for world size ", size);
  for (size_t peer = 0; peer < splits.size(); ++peer)
    TORCH_CHECK(splits[peer] >= 0, "tutti: ", op, ": ", what, " split size ", peer, " is ",
                splits[peer], ", below 0");
  const int64_t total = std::accumulate(splits.begin(), splits.end(), int64_t{0});
  TORCH_CHECK(total == rows, "tutti: ", op, ": the ", what, " split sizes add up to ", total,
              " but the ", what, " has ", rows, " rows");
  return splits;
}

// flat (contiguous) cut along dim 0 into consecutive blocks of rows[i] rows.
std::vector<PeerBlock> blocksOf(const at::Tensor& flat, const std::vector<int64_t>& rows) {
  const int64_t total = std::accumulate(rows.begin(), rows.end(), int64_t{0});
  const int64_t rowElements = total == 0 ? 0 : flat.numel() / total;
  auto* bytes = static_cast<char*>(flat.data_ptr());
  std::vector<PeerBlock> blocks;
  int64_t offset = 0;
  for (int64_t count : rows) {
    blocks.push_back({bytes + offset * rowElements * flat.element_size(),
                      static_cast<size_t>(count * rowElements)});
    offset += count;
  }
  return blocks;
}

bool allCounts(const std::vector<PeerBlock>& blocks, size_t count) {
  return std::all_of(blocks.begin(), blocks.end(), [&](auto b) { return b.count == count; });
}

}  // namespace

tuttiResult_t ProcessGroupTutti::exchange(const std::vector<PeerBlock>& sends,
                                          const std::vector<PeerBlock>& recvs,
                                          tuttiDataType_t dtype, TuttiWork& work) {
  if (allCounts(sends, 0) && allCounts(recvs, 0)) return tuttiSuccess;
  tutti_group_start();
  // Calls inside a group only record; a failure among them fails the group's end.
  for (int peer = 0; peer < size_; ++peer) {
    const PeerBlock& out = sends[static_cast<size_t>(peer)];
    const PeerBlock& in = recvs[static_cast<size_t>(peer)];
    if (out.count > 0) tutti_send(out.data, out.count, dtype, peer, comm(), nullptr);
    if (in.count > 0) tutti_recv(in.data, in.count, dtype, peer, comm(), nullptr);
  }
  return tutti_group_end_async(work.requestSlot());
}

ProcessGroupTutti::WorkPtr ProcessGroupTutti::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                            std::vector<int64_t>& outputSplitSizes,
                                                            std::vector<int64_t>& inputSplitSizes,
                                                            const c10d::AllToAllOptions& /*opts*/) {
  const char* op = "alltoall_base";
  checkTensor(input, op);
  checkTensor(output, op);
  checkSameDevice(input, output, op);
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "tutti: ", op,
              ": the output and input dtypes differ (", output.scalar_type(), ", ",
              input.scalar_type(), ")");
  // Equal splits both ways: each rank sends what it receives, as gloo and NCCL require; a
  // mismatch here would otherwise fail the whole group in flight.
  TORCH_CHECK(
      !outputSplitSizes.empty() || !inputSplitSizes.empty() || output.numel() == input.numel(),
      "tutti: ", op, ": without split sizes the output and input must be of one size; got ",
      output.numel(), " and ", input.numel(), " elements");
  const std::vector<int64_t> sendRows = rowsPerRank(input, inputSplitSizes, size_, op, "input");
  const std::vector<int64_t> recvRows = rowsPerRank(output, outputSplitSizes, size_, op, "output");
  return run(c10d::OpType::ALLTOALL_BASE, op, input.device(), {output}, [&](TuttiWork& work) {
    at::Tensor source = stagedInput(input, work);
    at::Tensor destination = stagedOutput(output, work);
    const std::vector<PeerBlock> sends = blocksOf(source, sendRows);
    const std::vector<PeerBlock> recvs = blocksOf(destination, recvRows);
    const size_t equal = sends[0].count;
    if (allCounts(sends, equal) && allCounts(recvs, equal))
      return tutti_alltoall(source.data_ptr(), destination.data_ptr(), equal, dtypeOf(source),
                            comm(), work.requestSlot());
    return exchange(sends, recvs, dtypeOf(source), work);
  });
}

ProcessGroupTutti::WorkPtr ProcessGroupTutti::alltoall(std::vector<at::Tensor>& outputs,
                                                       std::vector<at::Tensor>& inputs,
                                                       const c10d::AllToAllOptions& /*opts*/) {
  const char* op = "alltoall";
  TORCH_CHECK(static_cast<int>(inputs.size()) == size_ && static_cast<int>(outputs.size()) == size_,
              "tutti: ", op, " takes world size (", size_, ") inputs and outputs, got ",
              inputs.size(), " and ", outputs.size());
  for (const auto* list : {&inputs, &outputs})
    for (const at::Tensor& tensor : *list) {
      checkTensor(tensor, op);
      checkSameDevice(inputs[0], tensor, op);
      TORCH_CHECK(tensor.scalar_type() == inputs[0].scalar_type(), "tutti: ", op,
                  " needs tensors of one dtype; got ", inputs[0].scalar_type(), " and ",
                  tensor.scalar_type());
    }
  return run(c10d::OpType::ALLTOALL, op, inputs[0].device(), outputs, [&](TuttiWork& work) {
    std::vector<PeerBlock> sends, recvs;
    for (int peer = 0; peer < size_; ++peer) {
      at::Tensor source = stagedInput(inputs[static_cast<size_t>(peer)], work);
      at::Tensor destination = stagedOutput(outputs[static_cast<size_t>(peer)], work);
      sends.push_back({source.data_ptr(), elementCount(source)});
      recvs.push_back({destination.data_ptr(), elementCount(destination)});
    }
    return exchange(sends, recvs, dtypeOf(inputs[0]), work);
  });
}

ProcessGroupTutti::WorkPtr ProcessGroupTutti::send(std::vector<at::Tensor>& tensors, int dstRank,
                                                   int /*tag*/) {
  const char* op = "send";
  at::Tensor& tensor = theOnlyTensor(tensors, op);
  return run(c10d::OpType::SEND, op, tensor.device(), tensors, [&](TuttiWork& work) {
    at::Tensor source = stagedInput(tensor, work);
    return tutti_send(source.data_ptr(), elementCount(source), dtypeOf(source), dstRank, comm(),
                      work.requestSlot());
  });
}

ProcessGroupTutti::WorkPtr ProcessGroupTutti::recv(std::vector<at::Tensor>& tensors, int srcRank,
                                                   int /*tag*/) {
  const char* op = "recv";
  at::Tensor& tensor = theOnlyTensor(tensors, op);
  return run(c10d::OpType::RECV, op, tensor.device(), tensors, [&](TuttiWork& work) {
    at::Tensor destination = stagedOutput(tensor, work);
    *work.sourceSlot() = srcRank;
    return tutti_recv(destination.data_ptr(), elementCount(destination), dtypeOf(destination),
                      srcRank, comm(), work.requestSlot());
  });
}

ProcessGroupTutti::WorkPtr ProcessGroupTutti::recvAnysource(std::vector<at::Tensor>& tensors,
                                                            int /*tag*/) {
  const char* op = "recvAnysource";
  at::Tensor& tensor = theOnlyTensor(tensors, op);
  return run(c10d::OpType::RECVANYSOURCE, op, tensor.device(), tensors, [&](TuttiWork& work) {
    at::Tensor destination = stagedOutput(tensor, work);
    return tutti_recv_any(destination.data_ptr(), elementCount(destination), dtypeOf(destination),
                          work.sourceSlot(), comm(), work.requestSlot());
  });
}

}  // namespace tutti_torch
