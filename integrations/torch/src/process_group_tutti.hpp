// tutti as a torch.distributed backend. PyTorch 1.x backends subclass c10d::ProcessGroup; from
// 2.0 the ProcessGroup is a dispatcher over c10d::Backend subclasses with the same collective
// signatures, so one class serves both (GroupBase below).
//
// Every collective issues tutti's asynchronous form and returns at once; a CompletionThread
// completes the works (and their futures) in issue order. Tensors must be dense CPU or CUDA
// tensors (docs/torch.md, CUDA tensors); non-contiguous outputs are reduced in a contiguous copy
// that is copied back on completion.
#pragma once

#include <torch/version.h>
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "integrations/torch/src/completion_thread.hpp"
#include "integrations/torch/src/tutti_work.hpp"
#include "tutti/tutti.h"

namespace tutti_torch {

#if TORCH_VERSION_MAJOR >= 2
using GroupBase = c10d::Backend;
#else
using GroupBase = c10d::ProcessGroup;
#endif

// count elements at data, to or from one peer.
struct PeerBlock {
  void* data;
  size_t count;
};

class ProcessGroupTutti : public GroupBase {
 public:
  // Collective over the group: rendezvous through store (see store_rendezvous.hpp). A timeout
  // becomes the communicator's stall timeout (tutti_comm_set_timeout); none keeps TUTTI_TIMEOUT.
  ProcessGroupTutti(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                    std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  // A group over a communicator already made (a shrunk or grown one: elastic.cpp); the group
  // owns it from here, its rank and size are the communicator's.
  explicit ProcessGroupTutti(tuttiComm_t adopted);
  ~ProcessGroupTutti() override;

  const std::string getBackendName() const override;
  // The communicator, for tutti's own Reducer (tutti_torch.ddp.DistributedDataParallel).
  tuttiComm_t comm() const;

  using WorkPtr = c10::intrusive_ptr<c10d::Work>;
  WorkPtr allreduce(std::vector<at::Tensor>& tensors,
                    const c10d::AllreduceOptions& opts = c10d::AllreduceOptions()) override;
  WorkPtr allreduce_coalesced(
      std::vector<at::Tensor>& tensors,
      const c10d::AllreduceCoalescedOptions& opts = c10d::AllreduceCoalescedOptions()) override;
  WorkPtr broadcast(std::vector<at::Tensor>& tensors,
                    const c10d::BroadcastOptions& opts = c10d::BroadcastOptions()) override;
  WorkPtr reduce(std::vector<at::Tensor>& tensors,
                 const c10d::ReduceOptions& opts = c10d::ReduceOptions()) override;
  WorkPtr allgather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                    const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  WorkPtr allgather_coalesced(
      std::vector<std::vector<at::Tensor>>& outputLists, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  WorkPtr gather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                 const c10d::GatherOptions& opts = c10d::GatherOptions()) override;
  WorkPtr scatter(std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
                  const c10d::ScatterOptions& opts = c10d::ScatterOptions()) override;
  WorkPtr _allgather_base(at::Tensor& output, at::Tensor& input,
                          const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  WorkPtr reduce_scatter(
      std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  WorkPtr _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  WorkPtr alltoall_base(at::Tensor& output, at::Tensor& input,
                        std::vector<int64_t>& outputSplitSizes,
                        std::vector<int64_t>& inputSplitSizes,
                        const c10d::AllToAllOptions& opts = c10d::AllToAllOptions()) override;
  WorkPtr alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                   const c10d::AllToAllOptions& opts = c10d::AllToAllOptions()) override;
  // Tags are ignored: a communicator's sends and receives match in issue order.
  WorkPtr send(std::vector<at::Tensor>& tensors, int dstRank, int tag) override;
  WorkPtr recv(std::vector<at::Tensor>& tensors, int srcRank, int tag) override;
  // The first message any other rank sends (tutti_recv_any); the work's sourceRank() says whose.
  WorkPtr recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  WorkPtr barrier(const c10d::BarrierOptions& opts = c10d::BarrierOptions()) override;

 private:
  struct CommCloser {
    void operator()(tuttiComm* comm) const;
  };

  // Issues one operation on tensors of device: issue(work) calls tutti (setting
  // work.requestSlot()) and returns its result. Under the issue lock, so that works queue for
  // completion in tutti's order even when several threads (autograd's, the main one) issue at once.
  template <typename Issue>
  WorkPtr run(c10d::OpType type, const char* op, c10::Device device,
              std::vector<at::Tensor> outputs, Issue&& issue) {
    auto work = c10::make_intrusive<TuttiWork>(rank_, type, device, std::move(outputs));
    std::lock_guard lock(issueMutex_);
    if (device.is_cuda()) checkGroupDevice(device, op);
    const tuttiResult_t result = issue(*work);
    TORCH_CHECK(result == tuttiSuccess, "tutti: ", op, ": ", tutti_get_last_error());
    completions_.enqueue(work);
    return work;
  }
  // The first CUDA device the group is given becomes its device; tensors on another are an
  // error naming both (one GPU per process and group, as NCCL's backend has it).
  void checkGroupDevice(c10::Device device, const char* op);
  // allreduce of one sparse COO tensor (sparse_allreduce.cpp).
  WorkPtr sparseAllreduce(std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts);
  // Exchanges blocks with every rank (sends[i] to rank i, recvs[i] from rank i) as one tutti
  // group; issues nothing when every block is empty.
  tuttiResult_t exchange(const std::vector<PeerBlock>& sends, const std::vector<PeerBlock>& recvs,
                         tuttiDataType_t dtype, TuttiWork& work);

  std::unique_ptr<tuttiComm, CommCloser> comm_;
  std::mutex issueMutex_;
  std::optional<c10::Device> cudaDevice_;  // under issueMutex_
  // Declared after comm_: destroyed first, completing what is in flight while comm_ still exists.
  CompletionThread completions_;
};

}  // namespace tutti_torch
