// Sparse (COO) all-reduce as gloo does it: every rank's coalesced indices and values are gathered
// and summed, and the sum is coalesced. The number of non-zeros differs between ranks, so a
// first, blocking allgather exchanges each rank's count and shape (the shapes must agree); the
// indices and values then travel as bytes in one asynchronous allgather, each rank's block padded
// to the largest count, and are summed when it completes.
#include <ATen/ATen.h>

#include <algorithm>

#include "integrations/torch/src/process_group_tutti.hpp"
#include "integrations/torch/src/staging.hpp"

namespace tutti_torch {
namespace {

// A rank's coalesced entries, padded to `count` non-zeros.
struct PaddedEntries {
  at::Tensor indices;  // int64 [sparse dims, count]
  at::Tensor values;   // [count, dense sizes...]
};

PaddedEntries padded(const at::Tensor& input, int64_t count) {
  const at::Tensor indices = input._indices();
  const at::Tensor values = input._values();
  std::vector<int64_t> valueShape = values.sizes().vec();
  valueShape[0] = count;
  PaddedEntries out{at::zeros({indices.size(0), count}, indices.options()),
                    at::zeros(valueShape, values.options())};
  out.indices.narrow(1, 0, indices.size(1)).copy_(indices);
  out.values.narrow(0, 0, values.size(0)).copy_(values);
  return out;
}

// Bytes [offset, offset + like.nbytes()) of block, as a tensor shaped and typed like `like`
// (cloned first: the block's offset need not be aligned for like's type).
at::Tensor unpack(const at::Tensor& block, int64_t offset, const at::Tensor& like) {
  return block.narrow(0, offset, static_cast<int64_t>(like.nbytes()))
      .clone()
      .view(like.scalar_type())
      .view(like.sizes());
}

at::Tensor bytesOf(const at::Tensor& tensor) {
  return tensor.reshape({-1}).view(at::kByte);
}

}  // namespace

ProcessGroupTutti::WorkPtr ProcessGroupTutti::sparseAllreduce(std::vector<at::Tensor>& tensors,
                                                              const c10d::AllreduceOptions& opts) {
  const char* op = "allreduce (sparse)";
  at::Tensor& tensor = tensors[0];
  TORCH_CHECK(tensor.device().is_cpu(), "tutti: ", op,
              " supports CPU tensors only; got a tensor on ", tensor.device());
  TORCH_CHECK(opts.reduceOp == c10d::ReduceOp::SUM, "tutti: ", op,
              " supports ReduceOp SUM only (as gloo)");
  const at::Tensor input = tensor.coalesce();
  return run(c10d::OpType::ALLREDUCE, op, tensor.device(), tensors, [&](TuttiWork& work) {
    std::vector<int64_t> mine{input._nnz()};
    for (int64_t extent : input.sizes()) mine.push_back(extent);
    const size_t fields = mine.size();
    std::vector<int64_t> all(fields * static_cast<size_t>(size_));
    const tuttiResult_t shared =
        tutti_allgather(mine.data(), all.data(), fields, tuttiInt64, comm(), nullptr);
    if (shared != tuttiSuccess) return shared;
    std::vector<int64_t> counts;
    for (int peer = 0; peer < size_; ++peer) {
      const auto first = all.begin() + static_cast<std::ptrdiff_t>(fields * peer);
      TORCH_CHECK(
          std::equal(first + 1, first + static_cast<std::ptrdiff_t>(fields), mine.begin() + 1),
          "tutti: ", op, ": rank ", peer, "'s sparse tensor differs in shape from ", input.sizes(),
          " here");
      counts.push_back(*first);
    }
    const PaddedEntries own = padded(input, *std::max_element(counts.begin(), counts.end()));
    at::Tensor block = flattenedInputs({bytesOf(own.indices), bytesOf(own.values)}, work);
    at::Tensor gathered = at::empty({block.numel() * size_}, block.options());
    work.onSuccess([=, this] {
      at::Tensor sum = at::zeros_like(input);
      for (int peer = 0; peer < size_; ++peer) {
        const int64_t offset = block.numel() * peer;
        const int64_t count = counts[static_cast<size_t>(peer)];
        at::Tensor indices = unpack(gathered, offset, own.indices).narrow(1, 0, count);
        at::Tensor values =
            unpack(gathered, offset + static_cast<int64_t>(own.indices.nbytes()), own.values)
                .narrow(0, 0, count);
        sum.add_(at::sparse_coo_tensor(indices, values, input.sizes()));
      }
      tensor.copy_(sum.coalesce());
    });
    return tutti_allgather(block.data_ptr(), gathered.data_ptr(), elementCount(block), tuttiUint8,
                           comm(), work.requestSlot());
  });
}

}  // namespace tutti_torch
