// tests/unit/bucketing/grad_store.hpp: a rank's gradient buffers (float32 and float64), read and
// written as doubles.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "bucketing/tensor.hpp"

namespace tutti::bucketing::testing {

// Element i of a float32 or float64 buffer, as a double.
inline double valueAt(const void* data, tuttiDataType_t dtype, size_t i) {
  if (dtype == tuttiFloat64) return static_cast<const double*>(data)[i];
  return static_cast<const float*>(data)[i];
}

inline void setValueAt(void* data, tuttiDataType_t dtype, size_t i, double value) {
  if (dtype == tuttiFloat64)
    static_cast<double*>(data)[i] = value;
  else
    static_cast<float*>(data)[i] = static_cast<float>(value);
}

struct ParamSpec {
  size_t numel;
  tuttiDataType_t dtype;
};

class GradStore {
 public:
  explicit GradStore(const std::vector<ParamSpec>& specs) {
    for (size_t p = 0; p < specs.size(); ++p) {
      TensorBuffer buffer{
          "p" + std::to_string(p), {static_cast<int64_t>(specs[p].numel)}, specs[p].dtype, nullptr};
      storage_.emplace_back(buffer.numel(), 0.0);  // doubles: room and alignment for either type
      buffer.data = storage_.back().data();
      buffers_.push_back(buffer);
    }
  }
  GradStore(const GradStore&) = delete;
  GradStore& operator=(const GradStore&) = delete;

  const std::vector<TensorBuffer>& buffers() const { return buffers_; }
  size_t size() const { return buffers_.size(); }
  size_t numel(size_t p) const { return buffers_[p].numel(); }
  double get(size_t p, size_t i) const { return valueAt(buffers_[p].data, buffers_[p].dtype, i); }
  void set(size_t p, size_t i, double value) {
    setValueAt(buffers_[p].data, buffers_[p].dtype, i, value);
  }

 private:
  std::vector<std::vector<double>> storage_;
  std::vector<TensorBuffer> buffers_;
};

// Six parameters of two dtypes and uneven sizes.
inline std::vector<ParamSpec> smallModel() {
  return {{300, tuttiFloat32}, {64, tuttiFloat64},  {1000, tuttiFloat32},
          {17, tuttiFloat32},  {256, tuttiFloat64}, {500, tuttiFloat32}};
}

}  // namespace tutti::bucketing::testing
