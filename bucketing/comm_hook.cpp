// bucketing/comm_hook.cpp: the built-in hooks, over tutti's asynchronous all-reduce.
#include "bucketing/comm_hook.hpp"

#include <cstdint>
#include <vector>

#include "kernels/half.hpp"
#include "tutti/tutti.hpp"

namespace tutti::bucketing {
namespace {

class RequestReduction : public PendingReduction {
 public:
  explicit RequestReduction(Request request) : request_(std::move(request)) {}
  void wait() override { request_.wait(); }

 private:
  Request request_;
};

int worldSize(tuttiComm_t comm) {
  int size = 0;
  check(tutti_comm_size(comm, &size));
  return size;
}

template <typename T>
void divide(T* data, size_t count, int by) {
  const T factor = T{1} / static_cast<T>(by);
  for (size_t i = 0; i < count; ++i) data[i] *= factor;
}

void divide(void* data, size_t count, tuttiDataType_t dtype, int by) {
  if (dtype == tuttiFloat64)
    divide(static_cast<double*>(data), count, by);
  else
    divide(static_cast<float*>(data), count, by);
}

class AllreduceHook : public CommHook {
 public:
  std::string name() const override { return "allreduce"; }
  std::unique_ptr<PendingReduction> start(tuttiComm_t comm, void* data, size_t count,
                                          tuttiDataType_t dtype) override {
    divide(data, count, dtype, worldSize(comm));
    return startSum(comm, data, count, dtype);
  }
};

// The casts are the reduction kernels' own (kernels/half.hpp), so a compressed bucket is rounded
// exactly as the float16/bfloat16 sum that reduces it rounds.
struct Codec {
  const char* name;
  tuttiDataType_t wireType;
  uint16_t (*encode)(float);
  float (*decode)(uint16_t);
};

// Owns the 16-bit copy on the wire; casts it back into the bucket once the sum is done.
class CompressedReduction : public PendingReduction {
 public:
  CompressedReduction(tuttiComm_t comm, const Codec& codec, void* data, size_t count,
                      tuttiDataType_t dtype)
      : codec_(codec), data_(data), dtype_(dtype), wire_(count) {
    // As torch's hooks: round to 16 bits, then divide there (in float, rounded again).
    const auto size = static_cast<float>(worldSize(comm));
    for (size_t i = 0; i < count; ++i)
      wire_[i] = codec.encode(codec.decode(codec.encode(static_cast<float>(load(i)))) / size);
    tuttiRequest_t request = nullptr;
    check(tutti_allreduce(wire_.data(), wire_.data(), count, codec.wireType, tuttiSum, comm,
                          &request));
    request_ = Request(request);
  }
  void wait() override {
    request_.wait();
    for (size_t i = 0; i < wire_.size(); ++i) store(i, codec_.decode(wire_[i]));
  }

 private:
  double load(size_t i) const {
    return dtype_ == tuttiFloat64 ? static_cast<const double*>(data_)[i]
                                  : static_cast<const float*>(data_)[i];
  }
  void store(size_t i, float value) {
    if (dtype_ == tuttiFloat64)
      static_cast<double*>(data_)[i] = value;
    else
      static_cast<float*>(data_)[i] = value;
  }
  Codec codec_;
  void* data_;
  tuttiDataType_t dtype_;
  std::vector<uint16_t> wire_;
  Request request_;
};

class CompressHook : public CommHook {
 public:
  explicit CompressHook(const Codec& codec) : codec_(codec) {}
  std::string name() const override { return codec_.name; }
  std::unique_ptr<PendingReduction> start(tuttiComm_t comm, void* data, size_t count,
                                          tuttiDataType_t dtype) override {
    return std::make_unique<CompressedReduction>(comm, codec_, data, count, dtype);
  }

 private:
  Codec codec_;
};

}  // namespace

std::unique_ptr<PendingReduction> startSum(tuttiComm_t comm, void* data, size_t count,
                                           tuttiDataType_t dtype) {
  tuttiRequest_t request = nullptr;
  check(tutti_allreduce(data, data, count, dtype, tuttiSum, comm, &request));
  return std::make_unique<RequestReduction>(Request(request));
}

std::unique_ptr<CommHook> allreduceHook() {
  return std::make_unique<AllreduceHook>();
}

std::unique_ptr<CommHook> fp16CompressHook() {
  return std::make_unique<CompressHook>(
      Codec{"fp16_compress", tuttiFloat16, kernels::floatToHalfBits, kernels::halfBitsToFloat});
}

std::unique_ptr<CommHook> bf16CompressHook() {
  return std::make_unique<CompressHook>(Codec{
      "bf16_compress", tuttiBfloat16, kernels::floatToBfloatBits, kernels::bfloatBitsToFloat});
}

}  // namespace tutti::bucketing
