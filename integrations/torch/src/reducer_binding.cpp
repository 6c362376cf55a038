#include "integrations/torch/src/reducer_binding.hpp"

#include <ATen/ops/from_blob.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bucketing/bucketing.hpp"
#include "integrations/torch/src/process_group_tutti.hpp"
#include "integrations/torch/src/tensor_types.hpp"

namespace py = pybind11;
namespace bucketing = tutti::bucketing;

namespace tutti_torch {
namespace {

// The layer keeps pointers into the tensors' memory: they must be contiguous, and the caller
// keeps them alive (DistributedDataParallel holds them).
std::vector<bucketing::TensorBuffer> buffersOf(const std::vector<at::Tensor>& tensors,
                                               const std::vector<std::string>& names,
                                               const char* what) {
  TORCH_CHECK(names.size() == tensors.size(), "tutti: ", what, ": ", names.size(), " names for ",
              tensors.size(), " tensors");
  std::vector<bucketing::TensorBuffer> buffers;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor& tensor = tensors[i];
    checkTensor(tensor, what);
    // Its buckets are host memory that its engine reads in place.
    TORCH_CHECK(tensor.device().is_cpu(), "tutti: ", what,
                ": tutti's Reducer takes CPU tensors only; tensor ", i, " ('", names[i],
                "') is on ", tensor.device());
    TORCH_CHECK(tensor.is_contiguous(), "tutti: ", what, ": tensor ", i, " ('", names[i],
                "') is not contiguous");
    buffers.push_back({names[i], tensor.sizes().vec(), toTuttiType(tensor.scalar_type(), what),
                       tensor.data_ptr()});
  }
  return buffers;
}

// The Reducer, and the gradients' shapes and dtypes, which tensors viewing its buckets take.
class TorchReducer : public bucketing::Reducer {
 public:
  TorchReducer(tuttiComm_t comm, const std::vector<at::Tensor>& gradients,
               const std::vector<std::string>& names, const bucketing::ReducerOptions& options)
      : Reducer(comm, buffersOf(gradients, names, "Reducer"), options) {
    for (const at::Tensor& gradient : gradients)
      layouts_.emplace_back(gradient.sizes().vec(), gradient.options());
  }

  // The tensor shares ownership of the bucket's memory (its deleter holds the pointer), so it
  // stays valid after the rebuild replaces the bucket.
  at::Tensor gradientTensor(size_t param) const {
    std::shared_ptr<void> memory = gradientView(param);
    const auto release = [memory](void*) {};
    const auto& [sizes, options] = layouts_[param];
    return at::from_blob(memory.get(), sizes, release, options);
  }

 private:
  std::vector<std::pair<std::vector<int64_t>, at::TensorOptions>> layouts_;
};

// The built-in hooks by the names tutti_torch.ddp uses (torch's default_hooks map onto them).
std::unique_ptr<bucketing::CommHook> hookNamed(const std::string& name) {
  static const std::map<std::string, std::unique_ptr<bucketing::CommHook> (*)()> hooks{
      {"allreduce", bucketing::allreduceHook},
      {"fp16", bucketing::fp16CompressHook},
      {"bf16", bucketing::bf16CompressHook}};
  const auto hook = hooks.find(name);
  if (hook == hooks.end())
    throw py::value_error("tutti: unknown communication hook '" + name +
                          "'; the built-in hooks are 'allreduce', 'fp16' and 'bf16'");
  return hook->second();
}

py::dict statsOf(const TorchReducer& reducer) {
  const bucketing::IterationStats stats = reducer.lastStats();
  py::dict result;
  result["iteration"] = stats.iteration;
  result["backward_compute_ms"] = stats.backwardComputeMs;
  result["comm_ms"] = stats.commMs;
  result["exposed_comm_ms"] = stats.exposedCommMs;
  result["bucket_bytes"] = stats.bucketBytes;
  return result;
}

}  // namespace

void bindReducer(py::module& module) {
  using bucketing::Reducer;
  using Group = c10::intrusive_ptr<ProcessGroupTutti>;
  py::class_<TorchReducer>(module, "Reducer")
      .def(py::init([](const Group& group, const std::vector<at::Tensor>& gradients,
                       const std::vector<std::string>& names, size_t bucketCapBytes,
                       size_t firstBucketBytes, bool findUnusedParameters,
                       bool gradientAsBucketView) {
             bucketing::ReducerOptions options;
             options.bucketCapBytes = bucketCapBytes;
             options.firstBucketBytes = firstBucketBytes;
             options.findUnusedParameters = findUnusedParameters;
             options.gradientAsBucketView = gradientAsBucketView;
             return std::make_unique<TorchReducer>(group->comm(), gradients, names, options);
           }),
           py::arg("group"), py::arg("gradients"), py::arg("names"), py::arg("bucket_cap_bytes"),
           py::arg("first_bucket_bytes"), py::arg("find_unused_parameters") = false,
           py::arg("gradient_as_bucket_view") = false,
           py::keep_alive<1, 2>())  // the group's communicator must outlive the reducer
      .def(
          "set_comm_hook",
          [](TorchReducer& reducer, const std::string& name) {
            reducer.setCommHook(hookNamed(name));
          },
          py::arg("name"))
      .def("prepare", &Reducer::prepareForBackward, py::arg("unused") = std::vector<size_t>{},
           py::call_guard<py::gil_scoped_release>())
      .def("mark_ready", &Reducer::markReady, py::call_guard<py::gil_scoped_release>())
      .def("finalize", &Reducer::finalize, py::call_guard<py::gil_scoped_release>())
      .def("set_sync", &Reducer::setSyncEnabled)
      .def("sync_enabled", &Reducer::syncEnabled)
      .def("gradient_view", &TorchReducer::gradientTensor, py::arg("index"),
           "gradient_as_bucket_view: the gradient's place in its bucket, as a tensor.")
      .def("unused_everywhere", &Reducer::unusedEverywhere)
      .def("has_rebuilt_buckets", &Reducer::hasRebuiltBuckets)
      .def("bucket_assignment", &Reducer::bucketAssignment)
      .def("stats", &statsOf);

  module.def(
      "sync_module_states",
      [](const Group& group, const std::vector<at::Tensor>& tensors,
         const std::vector<std::string>& names, bool verify) {
        const auto buffers = buffersOf(tensors, names, "sync_module_states");
        py::gil_scoped_release release;
        if (verify) bucketing::verifyShapesAcrossRanks(group->comm(), buffers);
        bucketing::broadcastFromRank0(group->comm(), buffers);
      },
      py::arg("group"), py::arg("tensors"), py::arg("names"), py::arg("verify") = true,
      "Checks (unless verify is false) that every rank has the same tensors, then copies rank "
      "0's values everywhere.");

  module.def(
      "compute_bucket_assignment_by_size",
      [](const std::vector<at::Tensor>& tensors, const std::vector<size_t>& sizeLimits) {
        std::vector<bucketing::TensorSize> sizes;
        for (const at::Tensor& tensor : tensors)
          sizes.push_back({static_cast<size_t>(tensor.numel() * tensor.element_size()),
                           toTuttiType(tensor.scalar_type(), "compute_bucket_assignment_by_size")});
        return bucketing::computeBucketAssignmentBySize(sizes, sizeLimits);
      },
      py::arg("tensors"), py::arg("size_limits"),
      "tutti's bucket assignment, as torch.distributed._compute_bucket_assignment_by_size.");
}

}  // namespace tutti_torch
