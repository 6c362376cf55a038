#include "integrations/torch/src/reducer_binding.hpp"

#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <string>
#include <vector>

#include "integrations/torch/src/process_group_tutti.hpp"
#include "integrations/torch/src/tensor_types.hpp"
#include "runtime/bucketing/bucketing.hpp"

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
    TORCH_CHECK(tensor.is_contiguous(), "tutti: ", what, ": tensor ", i, " ('", names[i],
                "') is not contiguous");
    buffers.push_back({names[i], tensor.sizes().vec(), toTuttiType(tensor.scalar_type(), what),
                       tensor.data_ptr()});
  }
  return buffers;
}

py::dict statsOf(const bucketing::Reducer& reducer) {
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
  py::class_<Reducer>(module, "Reducer")
      .def(py::init([](const Group& group, const std::vector<at::Tensor>& gradients,
                       const std::vector<std::string>& names, size_t bucketCapBytes,
                       size_t firstBucketBytes) {
             bucketing::ReducerOptions options;
             options.bucketCapBytes = bucketCapBytes;
             options.firstBucketBytes = firstBucketBytes;
             return std::make_unique<Reducer>(group->comm(), buffersOf(gradients, names, "Reducer"),
                                              options);
           }),
           py::arg("group"), py::arg("gradients"), py::arg("names"), py::arg("bucket_cap_bytes"),
           py::arg("first_bucket_bytes"),
           py::keep_alive<1, 2>())  // the group's communicator must outlive the reducer
      .def(
          "prepare", [](Reducer& reducer) { reducer.prepareForBackward(); },
          py::call_guard<py::gil_scoped_release>())
      .def("mark_ready", &Reducer::markReady, py::call_guard<py::gil_scoped_release>())
      .def("finalize", &Reducer::finalize, py::call_guard<py::gil_scoped_release>())
      .def("set_sync", &Reducer::setSyncEnabled)
      .def("sync_enabled", &Reducer::syncEnabled)
      .def("bucket_assignment", &Reducer::bucketAssignment)
      .def("stats", &statsOf);

  module.def(
      "sync_module_states",
      [](const Group& group, const std::vector<at::Tensor>& tensors,
         const std::vector<std::string>& names) {
        const auto buffers = buffersOf(tensors, names, "sync_module_states");
        py::gil_scoped_release release;
        bucketing::verifyShapesAcrossRanks(group->comm(), buffers);
        bucketing::broadcastFromRank0(group->comm(), buffers);
      },
      py::arg("group"), py::arg("tensors"), py::arg("names"),
      "Checks that every rank has the same tensors, then copies rank 0's values everywhere.");

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
