// The Python module tutti_torch._C: the process group class, constructible from the arguments
// torch.distributed passes a backend's creator (store, rank, size, and a timeout as a timedelta
// or None), tutti's Reducer, registered memory as tensors, and the registered CPU allocator.
#include <ATen/Functions.h>
#include <pybind11/chrono.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <algorithm>
#include <stdexcept>

#include "integrations/torch/src/elastic.hpp"
#include "integrations/torch/src/process_group_tutti.hpp"
#include "integrations/torch/src/reducer_binding.hpp"
#include "integrations/torch/src/registered_allocator.hpp"

namespace py = pybind11;

PYBIND11_MODULE(_C, module) {
  // The base class must be registered with pybind11 before a subclass names it.
  py::module::import("torch.distributed");
  tutti_torch::GroupClass group(module, "ProcessGroupTutti");
  group.def(py::init([](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                        std::optional<std::chrono::milliseconds> timeout) {
              return c10::make_intrusive<tutti_torch::ProcessGroupTutti>(store, rank, size,
                                                                         timeout);
            }),
            py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout") = py::none(),
            // The rendezvous waits for the other processes; let this one's threads run.
            py::call_guard<py::gil_scoped_release>());
  tutti_torch::bindElastic(group);
  tutti_torch::bindReducer(module);
  // tutti_torch.registered_zeros shapes this flat byte tensor; freeing the tensor frees the
  // memory (tutti_mem_free).
  module.def(
      "registered_bytes",
      [](int64_t bytes) {
        if (bytes < 0) throw py::value_error("registered_bytes: bytes is negative");
        void* memory = nullptr;
        if (tutti_mem_alloc(&memory, static_cast<size_t>(std::max<int64_t>(bytes, 1))) !=
            tuttiSuccess)
          throw std::runtime_error(tutti_get_last_error());
        return at::from_blob(
            memory, {bytes}, [](void* data) { tutti_mem_free(data); }, at::kByte);
      },
      py::arg("bytes"));
  module.def("enable_registered_allocator", &tutti_torch::enableRegisteredAllocator,
             py::arg("min_bytes"), py::arg("max_cached_bytes"));
  module.def("disable_registered_allocator", &tutti_torch::disableRegisteredAllocator);
  module.def("registered_allocator_stats", [] {
    const tutti_torch::RegisteredAllocatorStats stats = tutti_torch::registeredAllocatorStats();
    py::dict result;
    result["enabled"] = stats.enabled;
    result["min_bytes"] = stats.minBytes;
    result["max_cached_bytes"] = stats.maxCachedBytes;
    result["live_bytes"] = stats.liveBytes;
    result["cached_bytes"] = stats.cachedBytes;
    result["fallbacks"] = stats.fallbacks;
    return result;
  });
}
