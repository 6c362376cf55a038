// The group itself and the collectives that reduce or copy one tensor in place.
#include "integrations/torch/src/process_group_tutti.hpp"

#include <ATen/ATen.h>
#include <pybind11/pybind11.h>

#include <optional>

#include "integrations/torch/src/staging.hpp"
#include "integrations/torch/src/store_rendezvous.hpp"
#include "integrations/torch/src/tensor_types.hpp"

namespace tutti_torch {

void ProcessGroupTutti::CommCloser::operator()(tuttiComm* comm) const {
  tutti_comm_destroy(comm);
}

ProcessGroupTutti::ProcessGroupTutti(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                     int size, std::optional<std::chrono::milliseconds> timeout)
    : GroupBase(rank, size), comm_(connectThroughStore(*store, rank, size)) {
  if (timeout)
    TORCH_CHECK(tutti_comm_set_timeout(comm(), timeout->count()) == tuttiSuccess,
                "tutti: setting the group's timeout: ", tutti_get_last_error());
  init();
}

namespace {

int rankOf(tuttiComm_t comm) {
  int rank = -1;
  TORCH_CHECK(tutti_comm_rank(comm, &rank) == tuttiSuccess, "tutti: ", tutti_get_last_error());
  return rank;
}

int sizeOf(tuttiComm_t comm) {
  int size = 0;
  TORCH_CHECK(tutti_comm_size(comm, &size) == tuttiSuccess, "tutti: ", tutti_get_last_error());
  return size;
}

}  // namespace

ProcessGroupTutti::ProcessGroupTutti(tuttiComm_t adopted)
    : GroupBase(rankOf(adopted), sizeOf(adopted)), comm_(adopted) {
  init();
}

// Python drops the last reference holding the GIL, while the completion thread may be dropping
// the last reference to a work's tensors, which takes the GIL to free their Python objects:
// waiting for that thread with the GIL held would deadlock.
ProcessGroupTutti::~ProcessGroupTutti() {
  std::optional<pybind11::gil_scoped_release> withoutGil;
  if (Py_IsInitialized() && PyGILState_Check()) withoutGil.emplace();
  completions_.stop();
  comm_.reset();
}

const std::string ProcessGroupTutti::getBackendName() const {
  return "tutti";
}

tuttiComm_t ProcessGroupTutti::comm() const {
  return comm_.get();
}

void ProcessGroupTutti::checkGroupDevice(c10::Device device, const char* op) {
  if (!cudaDevice_) cudaDevice_ = device;
  TORCH_CHECK(device == *cudaDevice_, "tutti: ", op, ": this group's CUDA tensors are on ",
              *cudaDevice_, "; got one on ", device,
              " (one GPU per process and group; make a group for the other)");
}

ProcessGroupTutti::WorkPtr ProcessGroupTutti::allreduce(std::vector<at::Tensor>& tensors,
                                                        const c10d::AllreduceOptions& opts) {
  const char* op = "allreduce";
  if (tensors.size() == 1 && tensors[0].defined() && tensors[0].is_sparse())
    return sparseAllreduce(tensors, opts);
  at::Tensor& tensor = theOnlyTensor(tensors, op);
  const tuttiRedOp_t reduceOp = toTuttiOp(opts.reduceOp, op);
  return run(c10d::OpType::ALLREDUCE, op, tensor.device(), tensors, [&](TuttiWork& work) {
    at::Tensor buffer = stagedOutput(tensor, work);
    return tutti_allreduce(buffer.data_ptr(), buffer.data_ptr(), elementCount(buffer),
                           dtypeOf(buffer), reduceOp, comm(), work.requestSlot());
  });
}

// One all-reduce over the tensors packed back to back (as gloo does), unpacked on completion.
ProcessGroupTutti::WorkPtr ProcessGroupTutti::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  const char* op = "allreduce_coalesced";
  TORCH_CHECK(!tensors.empty(), "tutti: ", op, " got no tensors");
  checkOneDtype(tensors, op);
  const tuttiRedOp_t reduceOp = toTuttiOp(opts.reduceOp, op);
  return run(c10d::OpType::ALLREDUCE_COALESCED, op, tensors[0].device(), tensors,
             [&](TuttiWork& work) {
               at::Tensor flat = flattenedInputs(tensors, work);
               scatterOnSuccess(flat, tensors, work);
               return tutti_allreduce(flat.data_ptr(), flat.data_ptr(), elementCount(flat),
                                      dtypeOf(flat), reduceOp, comm(), work.requestSlot());
             });
}

ProcessGroupTutti::WorkPtr ProcessGroupTutti::broadcast(std::vector<at::Tensor>& tensors,
                                                        const c10d::BroadcastOptions& opts) {
  const char* op = "broadcast";
  at::Tensor& tensor = theOnlyTensor(tensors, op);
  TORCH_CHECK(opts.rootTensor == 0, "tutti: ", op, ": rootTensor must be 0");
  return run(c10d::OpType::BROADCAST, op, tensor.device(), tensors, [&](TuttiWork& work) {
    at::Tensor buffer = stagedOutput(tensor, work);
    return tutti_broadcast(buffer.data_ptr(), buffer.data_ptr(), elementCount(buffer),
                           dtypeOf(buffer), static_cast<int>(opts.rootRank), comm(),
                           work.requestSlot());
  });
}

// The result lands on the root only; other ranks' tensors are left as they were.
ProcessGroupTutti::WorkPtr ProcessGroupTutti::reduce(std::vector<at::Tensor>& tensors,
                                                     const c10d::ReduceOptions& opts) {
  const char* op = "reduce";
  at::Tensor& tensor = theOnlyTensor(tensors, op);
  TORCH_CHECK(opts.rootTensor == 0, "tutti: ", op, ": rootTensor must be 0");
  const tuttiRedOp_t reduceOp = toTuttiOp(opts.reduceOp, op);
  const bool isRoot = opts.rootRank == rank_;
  return run(c10d::OpType::REDUCE, op, tensor.device(), tensors, [&](TuttiWork& work) {
    at::Tensor buffer = isRoot ? stagedOutput(tensor, work) : stagedInput(tensor, work);
    return tutti_reduce(buffer.data_ptr(), isRoot ? buffer.data_ptr() : nullptr,
                        elementCount(buffer), dtypeOf(buffer), reduceOp,
                        static_cast<int>(opts.rootRank), comm(), work.requestSlot());
  });
}

ProcessGroupTutti::WorkPtr ProcessGroupTutti::barrier(const c10d::BarrierOptions& /*opts*/) {
  return run(c10d::OpType::BARRIER, "barrier", c10::Device(c10::kCPU), {},
             [&](TuttiWork& work) { return tutti_barrier(comm(), work.requestSlot()); });
}

}  // namespace tutti_torch
