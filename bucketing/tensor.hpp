// bucketing/tensor.hpp: what the bucketing layer knows of a framework's tensor — a name,
// a shape, a dtype and a host buffer it does not own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tutti/tutti.h"

namespace tutti::bucketing {

struct TensorBuffer {
  std::string name;
  std::vector<int64_t> shape;
  tuttiDataType_t dtype = tuttiFloat32;
  void* data = nullptr;  // host memory, numel() elements of dtype

  size_t numel() const {
    size_t n = 1;
    for (int64_t dim : shape) n *= static_cast<size_t>(dim);
    return n;
  }
  size_t bytes() const { return numel() * tutti_type_size(dtype); }
};

// "3 ('fc.weight')": how error messages name a tensor.
inline std::string describe(const std::vector<TensorBuffer>& tensors, size_t index) {
  return std::to_string(index) + " ('" + tensors[index].name + "')";
}

}  // namespace tutti::bucketing
