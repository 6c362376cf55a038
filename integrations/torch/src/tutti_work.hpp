// One torch.distributed operation in flight on tutti: the request tutti returned, the tensors
// that must stay alive until they finish, what to do with the result (copy a staged output back
// into the caller's tensors), and the future DDP's reducer chains its callbacks on.
#pragma once

#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>

#include <functional>
#include <optional>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <vector>

#include "tutti/tutti.h"

namespace tutti_torch {

class TuttiWork : public c10d::Work {
 public:
  // device: where the call's tensors are. outputs: what the future holds once done (torch's
  // collectives return their tensor list).
  TuttiWork(int rank, c10d::OpType type, c10::Device device, std::vector<at::Tensor> outputs);
  ~TuttiWork() override;

  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  std::vector<at::Tensor> result() override;
  // A receive's sender, after wait() (torch's recv and recvAnysource report it, as gloo's do);
  // torch's error for any other work.
  int sourceRank() const override;

  // Filled while the operation is issued, before the work is queued for completion.
  // Where tutti writes the request; left null when nothing was issued (an empty exchange).
  // Every issue passes it to the tutti call that reads the tensors, after staging them: so for
  // CUDA tensors it first waits for the current stream, which holds the caller's work on them
  // and the staging copies.
  tuttiRequest_t* requestSlot();
  // Where a receive's sender goes: set when issued for a receive from one rank, written by
  // tutti_recv_any by the time its request completes.
  int* sourceSlot();
  void keepAlive(at::Tensor tensor);
  void onSuccess(std::function<void()> finishing);

  // Called once, on the completion thread: waits for the request, runs the finishing steps
  // (for CUDA tensors, until they have run on the device), then completes the work and its
  // future (with the error, if any).
  void waitAndComplete();

 private:
  std::optional<c10::Device> cudaDevice_;  // set for CUDA tensors
  tuttiRequest_t request_ = nullptr;
  int sourceRank_ = -1;  // a receive's sender; -1: not a receive
  std::vector<at::Tensor> outputs_;
  std::vector<at::Tensor> keptAlive_;
  std::vector<std::function<void()>> finishing_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace tutti_torch
