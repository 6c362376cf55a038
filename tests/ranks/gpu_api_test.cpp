// The GPU entry points of the C and C++ API where no CUDA driver can be used (run three ways by
// meson: libcuda.so.1 absent, TUTTI_CUDA_DRIVER naming the toolkit's stub library, and
// TUTTI_CUDA_DRIVER=none): the stream forms fail with an error saying why and enqueue nothing,
// their arguments are checked before the driver is needed, and host collectives run unchanged.
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/warnings.hpp"
#include "tutti/tutti.hpp"
#include "world.hpp"

using namespace tutti::testing;
using Catch::Matchers::Contains;

namespace {

// What the error must say about the driver: that libtutti has no GPU path where it was built
// without cuda.h (TUTTI_TEST_GPU_PATH=0, from meson), else from the way this run set
// TUTTI_CUDA_DRIVER; empty when a real driver loads here (a GPU machine), which this test is not
// about.
std::string expectedWhy() {
  if (!TUTTI_TEST_GPU_PATH) return "built without the CUDA toolkit's cuda.h";
  const char* set = std::getenv("TUTTI_CUDA_DRIVER");
  const std::string driver = set ? set : "libcuda.so.1";
  if (driver == "none") return "TUTTI_CUDA_DRIVER=none";
  if (driver.find("stubs") != std::string::npos) return "stub library (CUDA_ERROR_STUB_LIBRARY)";
  if (void* loaded = dlopen(driver.c_str(), RTLD_NOW | RTLD_LOCAL)) {
    dlclose(loaded);
    return "";
  }
  return "the CUDA driver " + driver + " cannot be loaded";
}

// Never dereferenced: without a driver nothing reaches the stream.
const auto kStream = reinterpret_cast<tuttiStream_t>(uintptr_t{0x1000});

}  // namespace

TEST_CASE("without a usable CUDA driver the stream forms fail and enqueue nothing",
          "[gpu][no-driver]") {
  const std::string why = expectedWhy();
  if (why.empty()) {
    WARN("a CUDA driver loads here: the no-driver checks do not apply");
    return;
  }
  tutti::tests::Warnings().expect();  // each failure is a warning, checked below
  ThreadWorld world(2);
  REQUIRE(world.ok());
  tuttiComm_t comm = world.comm(0);
  std::vector<float> send(8, 1.0f), recv(8, 7.0f);
  const auto failsSaying = [&](tuttiResult_t result) {
    CHECK(result == tuttiSystemError);
    CHECK_THAT(tutti_get_last_error(), Contains("no GPU path") && Contains(why));
  };
  failsSaying(
      tutti_allreduce_stream(send.data(), recv.data(), 8, tuttiFloat32, tuttiSum, comm, kStream));
  failsSaying(tutti_reduce_scatter_stream(send.data(), recv.data(), 4, tuttiFloat32, tuttiMax, comm,
                                          kStream));
  failsSaying(tutti_allgather_stream(send.data(), recv.data(), 4, tuttiFloat32, comm, kStream));
  failsSaying(tutti_broadcast_stream(send.data(), recv.data(), 8, tuttiFloat32, 1, comm, kStream));
  failsSaying(
      tutti_reduce_stream(send.data(), recv.data(), 8, tuttiFloat32, tuttiMin, 0, comm, kStream));
  failsSaying(tutti_alltoall_stream(send.data(), recv.data(), 4, tuttiFloat32, comm, kStream));
  failsSaying(tutti_send_stream(send.data(), 8, tuttiFloat32, 1, comm, kStream));
  failsSaying(tutti_recv_stream(recv.data(), 8, tuttiFloat32, 1, comm, kStream));
  // In a group: the member fails at once, and the group's end reports it and runs nothing.
  REQUIRE(tutti_group_start() == tuttiSuccess);
  failsSaying(tutti_send_stream(send.data(), 8, tuttiFloat32, 1, comm, kStream));
  CHECK(tutti_group_end() == tuttiSystemError);
  CHECK_THAT(tutti_get_last_error(), Contains("the group was not run") && Contains(why));
  CHECK(recv == std::vector<float>(8, 7.0f));

  // Nothing was queued and nothing failed: no async error, and host collectives (whose pointers
  // are all host memory without a driver) run as before, numbered from #1.
  tuttiResult_t asyncError = tuttiInternalError;
  CHECK(tutti_comm_get_async_error(comm, &asyncError) == tuttiSuccess);
  CHECK(asyncError == tuttiSuccess);
  const auto sums = onEveryRank<std::string>(2, [&](int rank) {
    std::vector<int32_t> in(5, rank + 1), out(5, 0);
    if (tutti_allreduce(in.data(), out.data(), 5, tuttiInt32, tuttiSum, world.comm(rank),
                        nullptr) != tuttiSuccess)
      return std::string(tutti_get_last_error());
    return std::to_string(out[0]) + "," + std::to_string(out[4]);
  });
  CHECK(sums == std::vector<std::string>{"3,3", "3,3"});

  // The C++ API throws the same.
  std::vector<tutti::Comm> single = tutti::Comm::world(1);
  try {
    single.front().allreduce(send.data(), recv.data(), 8, tuttiSum, kStream);
    FAIL("the stream form succeeded without a driver");
  } catch (const tutti::CommError& error) {
    CHECK(error.code() == tuttiSystemError);
    CHECK_THAT(error.what(), Contains(why));
  }
}

TEST_CASE("the stream forms check their arguments before they need the driver",
          "[gpu][no-driver]") {
  ThreadWorld world(2);
  REQUIRE(world.ok());
  tuttiComm_t comm = world.comm(1);
  std::vector<float> send(8, 1.0f), recv(8, 7.0f);
  CHECK(tutti_allreduce_stream(send.data(), recv.data(), SIZE_MAX / 2, tuttiFloat32, tuttiSum, comm,
                               kStream) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("rank 1: allreduce #1") && Contains("overflows"));
  CHECK(tutti_alltoall_stream(send.data(), recv.data(), SIZE_MAX / 4, tuttiFloat32, comm,
                              kStream) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("overflows"));
  CHECK(tutti_reduce_scatter_stream(send.data(), recv.data(), 4, static_cast<tuttiDataType_t>(42),
                                    tuttiSum, comm, kStream) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("invalid data type 42"));
  CHECK(tutti_reduce_stream(send.data(), recv.data(), 8, tuttiFloat32, static_cast<tuttiRedOp_t>(9),
                            0, comm, kStream) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("invalid reduction operation 9"));
  CHECK(tutti_broadcast_stream(send.data(), recv.data(), 8, tuttiFloat32, 2, comm, kStream) ==
        tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("root 2 is out of range"));
  CHECK(tutti_allgather_stream(nullptr, recv.data(), 4, tuttiFloat32, comm, kStream) ==
        tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("sendbuf is NULL"));
  CHECK(tutti_send_stream(send.data(), 8, tuttiFloat32, 5, comm, kStream) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(),
             Contains("rank 1: send #1") && Contains("peer 5 is out of range"));
  CHECK(tutti_recv_stream(recv.data(), SIZE_MAX / 2, tuttiFloat32, 0, comm, kStream) ==
        tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("overflows"));
  CHECK(tutti_allreduce_stream(send.data(), recv.data(), 8, tuttiFloat32, tuttiSum, nullptr,
                               kStream) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("communicator is NULL"));
  CHECK(recv == std::vector<float>(8, 7.0f));
}
