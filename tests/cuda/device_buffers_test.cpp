// Device buffers through the public API on a real GPU: every collective and send/recv, blocking,
// request and stream forms, 1-4 ranks as threads of this process (tutti_comm_init_all) sharing
// GPU 0 -- so staged through host memory: the runtime declines the device kernels for thread ranks
// sharing a GPU (runtime/gpu/gpu_sharing.hpp says why), and their stream forms wait for their
// stream on the host (runtime/device_side.hpp) --, checked against the independent host
// reference of tests/ranks (reference.hpp) through collective_check's CaseMemory; then the errors:
// host and device buffers mixed, a host buffer in a stream form, a NULL stream, a count that
// overflows, another device's buffer (with two GPUs), and a stream form whose peers never come,
// which must fail and leave its stream free.
#include <cuda_runtime.h>

#include <barrier>
#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <vector>

#include "tests/cuda/one_gpu_ring.hpp"
#include "tests/ranks/collective_check.hpp"
#include "tests/ranks/world.hpp"
#include "tutti/tutti.h"

using namespace tutti::testing;
using Catch::Matchers::Contains;
using tutti::kernels::cuda::test::check;
using tutti::kernels::cuda::test::DeviceBuffer;

namespace {

// Device memory on GPU 0, and, for the stream forms, a stream of this rank's own. The ranks are
// threads of this process: they allocate and free only while none has a collective in flight
// (CaseMemory::buffersReady), meeting at `ranks`.
class DeviceMemory : public CaseMemory {
 public:
  DeviceMemory(bool onStream, std::barrier<>& ranks) : ranks_(ranks) {
    check(cudaSetDevice(0), "cudaSetDevice");
    if (onStream) check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "stream");
  }
  ~DeviceMemory() override {
    if (stream_) cudaStreamDestroy(stream_);
  }
  void* allocate(size_t bytes) override {
    void* data = nullptr;
    check(cudaMalloc(&data, bytes), "cudaMalloc");
    return data;
  }
  void release(void* data) override { cudaFree(data); }
  void upload(void* to, const void* from, size_t bytes) override {
    check(cudaMemcpy(to, from, bytes, cudaMemcpyHostToDevice), "upload");
  }
  void download(void* to, const void* from, size_t bytes) override {
    check(cudaMemcpy(to, from, bytes, cudaMemcpyDeviceToHost), "download");
  }
  tuttiStream_t stream() override { return stream_; }
  void synchronize() override {
    if (stream_) check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }
  void buffersReady() override { ranks_.arrive_and_wait(); }
  void resultsRead() override { ranks_.arrive_and_wait(); }

 private:
  std::barrier<>& ranks_;
  cudaStream_t stream_ = nullptr;
};

enum class Form { kBlocking, kRequest, kStream };
const char* formName(Form form) {
  return form == Form::kBlocking ? "blocking" : form == Form::kRequest ? "request" : "stream";
}

}  // namespace

TEST_CASE("every collective on device buffers matches the host reference", "[cuda][api]") {
  for (int nranks = 1; nranks <= 4; ++nranks) {
    ThreadWorld world(nranks);
    REQUIRE(world.ok());
    std::mt19937_64 rng(static_cast<uint64_t>(nranks) * 131);
    for (const Kind kind : kAllKinds)
      for (const Form form : {Form::kBlocking, Form::kRequest, Form::kStream})
        // A few seeded cases each, so that the suite stays within bench/gpu-check's budget.
        for (int repeat = 0; repeat < 2; ++repeat) {
          Case c = randomCase(rng, kind, nranks, size_t{1} << 18);
          c.async = form == Form::kRequest;
          INFO(nranks << " ranks, " << formName(form) << ": " << describe(c));
          std::barrier ranks(nranks);
          const auto problems = onEveryRank<std::string>(nranks, [&](int rank) {
            DeviceMemory memory(form == Form::kStream, ranks);
            return runCase(world.comm(rank), c, nullptr, nullptr, &memory);
          });
          for (const std::string& problem : problems) CHECK(problem == "");
        }
  }
}

TEST_CASE("device buffers: bad input is refused before anything runs", "[cuda][api][bad-input]") {
  ThreadWorld world(2);
  REQUIRE(world.ok());
  tuttiComm_t comm = world.comm(0);
  check(cudaSetDevice(0), "cudaSetDevice");
  DeviceBuffer device(64);
  std::vector<float> host(16, 1.0f);
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");

  CHECK(tutti_allreduce(device.data(), host.data(), 16, tuttiFloat32, tuttiSum, comm, nullptr) ==
        tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("sendbuf is device memory on device 0") &&
                                         Contains("recvbuf is host memory"));
  CHECK(tutti_allreduce_stream(host.data(), device.data(), 16, tuttiFloat32, tuttiSum, comm,
                               stream) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(),
             Contains("sendbuf is host memory") && Contains("the stream forms take device"));
  CHECK(tutti_allreduce_stream(device.data(), device.data(), 16, tuttiFloat32, tuttiSum, comm,
                               nullptr) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("the stream is NULL"));
  CHECK(tutti_allreduce_stream(device.data(), device.data(), SIZE_MAX / 2, tuttiFloat32, tuttiSum,
                               comm, stream) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("overflows"));
  int devices = 0;
  check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  if (devices > 1) {
    check(cudaSetDevice(1), "cudaSetDevice");
    {
      DeviceBuffer other(64);
      CHECK(tutti_allreduce(device.data(), other.data(), 16, tuttiFloat32, tuttiSum, comm,
                            nullptr) == tuttiInvalidArgument);
      CHECK_THAT(tutti_get_last_error(), Contains("device 0") && Contains("device 1"));
    }
    check(cudaSetDevice(0), "cudaSetDevice");
  } else {
    WARN("one GPU: the other-device check needs two");
  }
  // Nothing was enqueued: the stream is idle, and no error was kept.
  CHECK(cudaStreamQuery(stream) == cudaSuccess);
  tuttiResult_t asyncError = tuttiInternalError;
  CHECK(tutti_comm_get_async_error(comm, &asyncError) == tuttiSuccess);
  CHECK(asyncError == tuttiSuccess);
  cudaStreamDestroy(stream);
}

TEST_CASE("a stream form that cannot finish leaves its stream free", "[cuda][api][faults]") {
  ThreadWorld world(2);
  REQUIRE(world.ok());
  check(cudaSetDevice(0), "cudaSetDevice");
  // Allocated before any rank calls (CaseMemory::buffersReady says why).
  DeviceBuffer rank0Buffer(4096), rank1Buffer(4096);
  unsigned char* const buffers[2] = {rank0Buffer.data(), rank1Buffer.data()};
  cudaStream_t streams[2] = {};
  for (cudaStream_t& made : streams)
    check(cudaStreamCreateWithFlags(&made, cudaStreamNonBlocking), "stream");
  // Both ranks once: the first collective on device buffers connects the device ring, which
  // takes every rank (a rank alone fails it, and the communicator with it).
  const auto connected = onEveryRank<int>(2, [&](int rank) {
    check(cudaSetDevice(0), "cudaSetDevice");
    const tuttiResult_t result =
        tutti_allreduce_stream(buffers[rank], buffers[rank], 1024, tuttiFloat32, tuttiSum,
                               world.comm(rank), streams[rank]);
    if (result == tuttiSuccess) check(cudaStreamSynchronize(streams[rank]), "synchronize");
    return static_cast<int>(result);
  });
  REQUIRE(connected == std::vector<int>{tuttiSuccess, tuttiSuccess});
  tuttiComm_t comm = world.comm(0);
  REQUIRE(tutti_comm_set_timeout(comm, 1000) == tuttiSuccess);
  cudaStream_t stream = streams[0];
  // Now rank 1 never calls: rank 0's all-reduce times out. The ranks are threads of one process
  // on one GPU, so since the first collective their stream forms wait for their stream on the
  // host and run as the blocking forms (docs/gpu.md, "Ranks sharing a GPU"): the call itself
  // times out, and nothing of it is left on the stream.
  CHECK(tutti_allreduce_stream(buffers[0], buffers[0], 1024, tuttiFloat32, tuttiSum, comm,
                               stream) == tuttiTimeout);
  CHECK(cudaStreamQuery(stream) == cudaSuccess);
  tuttiResult_t asyncError = tuttiSuccess;
  CHECK(tutti_comm_get_async_error(comm, &asyncError) == tuttiSuccess);
  CHECK(asyncError == tuttiTimeout);
  for (cudaStream_t made : streams) cudaStreamDestroy(made);
}
