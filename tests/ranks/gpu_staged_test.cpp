// Device buffers through the API with tests/ranks/host_cuda_driver standing in for the CUDA driver
// (TUTTI_CUDA_DRIVER names it; meson sets it): the staged path and the stream protocol of
// docs/gpu.md run here without a GPU (TUTTI_GPU_PATH=staged), and so do the device kernels' path
// (TUTTI_GPU_PATH=kernels: the ring collectives of 2-4 ranks run as kernels on the stand-in). Every
// collective and send/recv on "device" buffers (which the host cannot touch: a host access
// crashes), blocking, request and stream forms, 1-4 ranks as threads, against the independent
// reference of reference.hpp; mixed kinds, another device, a host buffer or a NULL or destroyed
// stream in a stream form; and stream forms that cannot finish (a peer that never comes, an abort,
// a stream that never reaches the operation), which must still release their stream and leave the
// error as the communicator's async error.
#include <cuda.h>
#include <dlfcn.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "collective_check.hpp"
#include "stand_in_driver.hpp"
#include "tests/warnings.hpp"
#include "tutti/tutti.hpp"
#include "world.hpp"

using namespace tutti::testing;
using Catch::Matchers::Contains;

namespace {

enum class Form { kBlocking, kRequest, kStream };
const char* formName(Form form) {
  return form == Form::kBlocking ? "blocking" : form == Form::kRequest ? "request" : "stream";
}

}  // namespace

TEST_CASE("every collective on stand-in device buffers matches the reference", "[gpu][staged]") {
  REQUIRE(driver().handle);
  const long kernelsBefore = driver().kernelsLaunched();
  const uint64_t seed = 20261202;
  INFO("seed " << seed);
  for (int nranks = 1; nranks <= 4; ++nranks) {
    ThreadWorld world(nranks);
    REQUIRE(world.ok());
    std::mt19937_64 rng(seed + static_cast<uint64_t>(nranks));
    for (const Kind kind : kAllKinds)
      for (const Form form : {Form::kBlocking, Form::kRequest, Form::kStream})
        for (int repeat = 0; repeat < 2; ++repeat) {
          Case c = randomCase(rng, kind, nranks, 65536);
          c.async = form == Form::kRequest;
          INFO(nranks << " ranks, " << formName(form) << ": " << describe(c));
          const auto problems = onEveryRankOwnGpu<std::string>(nranks, [&](int rank) {
            DeviceMemory memory(form == Form::kStream);
            return runCase(world.comm(rank), c, nullptr, nullptr, &memory);
          });
          for (const std::string& problem : problems) CHECK(problem == "");
        }
  }
  // The path meson chose for this run: kernels launched for the ring collectives, or none.
  const char* path = std::getenv("TUTTI_GPU_PATH");
  if (path && std::string(path) == "staged")
    CHECK(driver().kernelsLaunched() == kernelsBefore);
  else
    CHECK(driver().kernelsLaunched() > kernelsBefore);
}

TEST_CASE("stand-in device buffers: bad input is refused and nothing is enqueued",
          "[gpu][staged][bad-input]") {
  ThreadWorld world(2);
  REQUIRE(world.ok());
  tuttiComm_t comm = world.comm(0);
  DeviceBuffer device(256);
  std::vector<float> host(16, 1.0f);
  Stream stream;

  CHECK(tutti_allreduce(device.data, host.data(), 16, tuttiFloat32, tuttiSum, comm, nullptr) ==
        tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(),
             Contains("rank 0: allreduce #1") && Contains("sendbuf is device memory on device 0") &&
                 Contains("recvbuf is host memory") && Contains("not both"));
  CHECK(tutti_allreduce_stream(host.data(), device.data, 16, tuttiFloat32, tuttiSum, comm,
                               stream.get()) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(),
             Contains("sendbuf is host memory") && Contains("the stream forms take device"));
  CHECK(tutti_allreduce_stream(device.data, device.data, 16, tuttiFloat32, tuttiSum, comm,
                               nullptr) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("the stream is NULL"));
  CHECK(tutti_allreduce_stream(device.data, device.data, SIZE_MAX / 2, tuttiFloat32, tuttiSum, comm,
                               stream.get()) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("overflows"));

  // Another device: in one call, against the stream's, and against the communicator's (which
  // its first device buffer bound: device 0, in a world of one so that the binding call runs).
  driver().setDevice(1);
  DeviceBuffer other(256);
  Stream otherStream;
  driver().setDevice(0);
  CHECK(tutti_allreduce(device.data, other.data, 16, tuttiFloat32, tuttiSum, comm, nullptr) ==
        tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("sendbuf is device memory on device 0") &&
                                         Contains("recvbuf is device memory on device 1") &&
                                         Contains("one device"));
  CHECK(tutti_allreduce_stream(device.data, device.data, 16, tuttiFloat32, tuttiSum, comm,
                               otherStream.get()) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("but the stream is on device 1"));
  tuttiComm_t solo = nullptr;
  REQUIRE(tutti_comm_init_all(&solo, 1) == tuttiSuccess);
  CHECK(tutti_allreduce(device.data, device.data, 16, tuttiFloat32, tuttiSum, solo, nullptr) ==
        tuttiSuccess);
  CHECK(tutti_allreduce(other.data, other.data, 16, tuttiFloat32, tuttiSum, solo, nullptr) ==
        tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(),
             Contains("on device 1") && Contains("communicator's device buffers are on device 0"));

  // Stream forms of one communicator in a group: on one stream, and not mixed with host forms
  // (invalid usage, which is a warning).
  tutti::tests::Warnings().expect();
  Stream second;
  REQUIRE(tutti_group_start() == tuttiSuccess);
  CHECK(tutti_send_stream(device.data, 4, tuttiFloat32, 0, solo, stream.get()) == tuttiSuccess);
  CHECK(tutti_recv_stream(device.data, 4, tuttiFloat32, 0, solo, second.get()) == tuttiSuccess);
  CHECK(tutti_group_end() == tuttiInvalidUsage);
  CHECK_THAT(tutti_get_last_error(), Contains("all on one stream or none"));
  REQUIRE(tutti_group_start() == tuttiSuccess);
  CHECK(tutti_send_stream(device.data, 4, tuttiFloat32, 0, solo, stream.get()) == tuttiSuccess);
  CHECK(tutti_recv(host.data(), 4, tuttiFloat32, 0, solo, nullptr) == tuttiSuccess);
  CHECK(tutti_group_end() == tuttiInvalidUsage);
  CHECK_THAT(tutti_get_last_error(), Contains("no stream"));
  CHECK(tutti_comm_destroy(solo) == tuttiSuccess);

  // A destroyed stream is one the driver does not know.
  Stream gone;
  void* goneHandle = gone.get();
  gone.destroy();
  CHECK(tutti_allreduce_stream(device.data, device.data, 16, tuttiFloat32, tuttiSum, comm,
                               static_cast<tuttiStream_t>(goneHandle)) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("is not usable (destroyed?)"));

  // Nothing ran: no async error, and the communicator still works on device buffers.
  CHECK(asyncError(comm) == tuttiSuccess);
}

TEST_CASE("a stream form that cannot finish still releases its stream", "[gpu][staged][faults]") {
  tutti::tests::Warnings().expect();  // the timeouts and the abort are warnings
  ThreadWorld world(2);
  REQUIRE(world.ok());
  DeviceBuffer buffer(4096);

  SECTION("a peer that never comes: the operation times out") {
    tuttiComm_t comm = world.comm(0);
    REQUIRE(tutti_comm_set_timeout(comm, 300) == tuttiSuccess);
    Stream stream;
    REQUIRE(tutti_allreduce_stream(buffer.data, buffer.data, 1024, tuttiFloat32, tuttiSum, comm,
                                   stream.get()) == tuttiSuccess);
    stream.synchronize();  // returns: the completion word was written
    CHECK(asyncError(comm) == tuttiTimeout);
  }
  SECTION("an abort ends an operation waiting for its peer") {
    tuttiComm_t comm = world.comm(1);
    Stream stream;
    REQUIRE(tutti_broadcast_stream(buffer.data, buffer.data, 1024, tuttiFloat32, 0, comm,
                                   stream.get()) == tuttiSuccess);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    REQUIRE(tutti_comm_abort(comm) == tuttiSuccess);
    stream.synchronize();
    CHECK(asyncError(comm) != tuttiSuccess);
  }
  SECTION("a stream that never reaches the operation: its wait times out, the stream goes on") {
    // Two ranks, of which only the first calls: with one, the operation is a copy on the stream
    // alone and the host waits for nothing.
    tuttiComm_t pair[2] = {};
    REQUIRE(tutti_comm_init_all(pair, 2) == tuttiSuccess);
    tuttiComm_t solo = pair[0];
    REQUIRE(tutti_comm_set_timeout(solo, 300) == tuttiSuccess);
    Stream stream;
    alignas(4) static uint32_t blocker = 0;
    stream.holdBack(blocker);  // work before the operation that waits
    REQUIRE(tutti_allreduce_stream(buffer.data, buffer.data, 1024, tuttiFloat32, tuttiSum, solo,
                                   stream.get()) == tuttiSuccess);
    // The engine gives up on the stream after the timeout; the later operation fails with it.
    std::vector<float> host(4, 1.0f);
    CHECK(tutti_allreduce(host.data(), host.data(), 4, tuttiFloat32, tuttiSum, solo, nullptr) ==
          tuttiTimeout);
    CHECK_THAT(tutti_get_last_error(), Contains("its stream did not reach it"));
    CHECK(asyncError(solo) == tuttiTimeout);
    std::atomic_ref<uint32_t>(blocker).store(1);
    stream.synchronize();  // the completion word was written: nothing waits any more
    CHECK(tutti_comm_destroy(solo) == tuttiSuccess);
    CHECK(tutti_comm_destroy(pair[1]) == tuttiSuccess);
  }
}

TEST_CASE("one rank: a collective on device buffers is a copy on the device, nothing staged",
          "[gpu][staged]") {
  tuttiComm_t solo = nullptr;
  REQUIRE(tutti_comm_init_all(&solo, 1) == tuttiSuccess);
  REQUIRE(tutti_comm_set_timeout(solo, 300) == tuttiSuccess);
  constexpr size_t kCount = 1000;
  std::vector<float> values(kCount);
  std::mt19937 rng(7);
  for (float& v : values) v = std::uniform_real_distribution<float>(-1, 1)(rng);
  DeviceBuffer input(kCount * 4), output(kCount * 4), gathered(kCount * 4);
  driver().toDevice(reinterpret_cast<DevicePtr>(input.data), values.data(), kCount * 4);
  auto download = [&](const DeviceBuffer& buffer) {
    std::vector<float> out(kCount);
    driver().toHost(out.data(), reinterpret_cast<DevicePtr>(buffer.data), kCount * 4);
    return out;
  };
  // A stream held back: the staged path's host would wait for it and time out; a copy on the
  // stream leaves the host nothing to wait for.
  Stream stream;
  alignas(4) static uint32_t blocker = 0;
  stream.holdBack(blocker);
  REQUIRE(tutti_allreduce_stream(input.data, output.data, kCount, tuttiFloat32, tuttiMax, solo,
                                 stream.get()) == tuttiSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  CHECK(tutti_allgather(input.data, gathered.data, kCount, tuttiFloat32, solo, nullptr) ==
        tuttiSuccess);
  CHECK(download(gathered) == values);
  CHECK(asyncError(solo) == tuttiSuccess);
  std::atomic_ref<uint32_t>(blocker).store(1);
  stream.synchronize();
  CHECK(download(output) == values);
  CHECK(tutti_comm_destroy(solo) == tuttiSuccess);
}

TEST_CASE("the C++ API's stream forms, alone and in a group", "[gpu][staged]") {
  constexpr size_t kCount = 1000;
  std::vector<tutti::Comm> comms = tutti::Comm::world(2);
  const auto results = onEveryRankOwnGpu<std::vector<int64_t>>(2, [&](int rank) {
    tutti::Comm& comm = comms[static_cast<size_t>(rank)];
    DeviceBuffer mine(kCount * sizeof(int64_t)), theirs(kCount * sizeof(int64_t));
    std::vector<int64_t> values(kCount);
    for (size_t i = 0; i < kCount; ++i) values[i] = static_cast<int64_t>(i) * (rank + 1);
    driver().toDevice(reinterpret_cast<DevicePtr>(mine.data), values.data(), kCount * 8);
    Stream stream;
    auto* data = static_cast<int64_t*>(mine.data);
    auto* received = static_cast<int64_t*>(theirs.data);
    comm.allreduce(data, data, kCount, tuttiSum, stream.get());  // i * 3 everywhere
    {
      tutti::Group group;
      group.send(comm, data, kCount, 1 - rank, stream.get());
      group.recv(comm, received, kCount, 1 - rank, stream.get());
    }
    stream.synchronize();
    std::vector<int64_t> out(kCount);
    driver().toHost(out.data(), reinterpret_cast<DevicePtr>(received), kCount * 8);
    return out;
  });
  std::vector<int64_t> expected(kCount);
  for (size_t i = 0; i < kCount; ++i) expected[i] = static_cast<int64_t>(i) * 3;
  CHECK(results[0] == expected);
  CHECK(results[1] == expected);
}

TEST_CASE("with a driver loaded, host and registered host buffers run as before", "[gpu][staged]") {
  tuttiComm_t solo = nullptr;
  REQUIRE(tutti_comm_init_all(&solo, 1) == tuttiSuccess);
  CUcontext context = nullptr;
  void* pinned = nullptr;
  REQUIRE(driver().pushContext(deviceZero()) == 0);
  REQUIRE(driver().hostAlloc(&pinned, 64 * sizeof(int32_t), 0) == 0);
  driver().popContext(&context);
  std::vector<int32_t> host(64);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<int32_t>(i);
  // Host into registered host memory: both kinds the host may touch, so one call takes them.
  CHECK(tutti_allreduce(host.data(), pinned, 64, tuttiInt32, tuttiSum, solo, nullptr) ==
        tuttiSuccess);
  CHECK(std::vector<int32_t>(static_cast<int32_t*>(pinned), static_cast<int32_t*>(pinned) + 64) ==
        host);
  driver().freeHost(pinned);
  CHECK(tutti_comm_destroy(solo) == tuttiSuccess);
}
