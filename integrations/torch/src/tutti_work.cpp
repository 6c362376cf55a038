#include "integrations/torch/src/tutti_work.hpp"

#include <c10/util/Exception.h>

#include <exception>
#include <string>

#include "integrations/torch/src/cuda_sync.hpp"

namespace tutti_torch {

TuttiWork::TuttiWork(int rank, c10d::OpType type, c10::Device device,
                     std::vector<at::Tensor> outputs)
    : c10d::Work(rank, type),
      cudaDevice_(device.is_cuda() ? std::optional(device) : std::nullopt),
      outputs_(std::move(outputs)),
      // On CUDA tensors a CUDA future, as NCCL's: it records events when completed, so that its
      // waiters and then() callbacks, on whatever stream, are ordered after the results.
      future_(c10::make_intrusive<c10::ivalue::Future>(
          c10::ListType::create(c10::TensorType::get()),
          cudaDevice_ ? std::vector{*cudaDevice_} : std::vector<c10::Device>{})) {}

// A work dropped before it was queued (issuing failed after tutti accepted it) owns its request.
TuttiWork::~TuttiWork() {
  if (request_ != nullptr) tutti_request_free(request_);
}

c10::intrusive_ptr<c10::ivalue::Future> TuttiWork::getFuture() {
  return future_;
}

std::vector<at::Tensor> TuttiWork::result() {
  return outputs_;
}

int TuttiWork::sourceRank() const {
  if (sourceRank_ < 0) return c10d::Work::sourceRank();
  return sourceRank_;
}

tuttiRequest_t* TuttiWork::requestSlot() {
  if (cudaDevice_) waitForCurrentStream(*cudaDevice_);
  return &request_;
}

int* TuttiWork::sourceSlot() {
  return &sourceRank_;
}

void TuttiWork::keepAlive(at::Tensor tensor) {
  keptAlive_.push_back(std::move(tensor));
}

void TuttiWork::onSuccess(std::function<void()> finishing) {
  finishing_.push_back(std::move(finishing));
}

void TuttiWork::waitAndComplete() {
  std::string failure;
  if (request_ != nullptr) {
    // The last-error string is per thread: read it right after the call that failed.
    const tuttiResult_t result = tutti_wait(request_);
    // torch's callers and tests tell a timeout by " (Timed out|closed|timeout) ", as gloo words
    // it; tutti's own detail follows.
    if (result == tuttiTimeout) failure = "Timed out (no progress within the timeout): ";
    if (result != tuttiSuccess) failure += tutti_get_last_error();
    tutti_request_free(request_);
    request_ = nullptr;
  }
  std::exception_ptr error;
  try {
    TORCH_CHECK(failure.empty(), "tutti: ", c10d::opTypeToString(retrieveOpType()),
                " failed: ", failure);
    for (auto& finishing : finishing_) finishing();
    // The copies back ran on this thread's stream; whoever the future or wait() releases may
    // read the results on another.
    if (cudaDevice_ && !finishing_.empty()) waitForCurrentStream(*cudaDevice_);
  } catch (...) {
    error = std::current_exception();
  }
  keptAlive_.clear();
  finishing_.clear();
  finish(error);
  if (error)
    future_->setError(error);
  else
    future_->markCompleted(c10::IValue(outputs_));
}

}  // namespace tutti_torch
