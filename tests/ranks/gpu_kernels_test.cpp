// The device kernels' path (docs/gpu.md, "Device kernels in the runtime") with the CPU stand-in
// driver, whose kernels run kernels/device/launch.hpp's schedules on CPU threads over the device
// FIFOs the ranks share: that collectives on device buffers really run as kernels (and alltoall,
// staged, does not), the ring's connection, and every way a kernel cannot finish — a peer whose
// kernel never comes, an abort, a peer that aborts, a stream that never reaches it — each ending
// the kernel through the abort flag, releasing the stream, and failing the operation naming why.
// gpu_staged_test's correctness cases run on this path too (meson: gpu-kernels).
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <deque>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "stand_in_driver.hpp"
#include "tests/warnings.hpp"
#include "tutti/tutti.h"
#include "world.hpp"

using namespace tutti::testing;
using Catch::Matchers::Contains;

namespace {

constexpr size_t kCount = 3000;

std::vector<float> seeded(int rank, size_t count = kCount) {
  std::mt19937 rng(static_cast<unsigned>(2026 + rank));
  std::vector<float> values(count);
  for (float& v : values) v = static_cast<float>(std::uniform_int_distribution<int>(-50, 50)(rng));
  return values;
}

std::vector<float> download(const DeviceBuffer& buffer, size_t count = kCount) {
  std::vector<float> out(count);
  driver().toHost(out.data(), reinterpret_cast<DevicePtr>(buffer.data), count * sizeof(float));
  return out;
}

// The sum of ranks 0..n-1's seeded values (small integers: exact in any order).
std::vector<float> seededSum(int n, size_t count = kCount) {
  std::vector<float> sum(count, 0.0f);
  for (int rank = 0; rank < n; ++rank) {
    const std::vector<float> values = seeded(rank, count);
    for (size_t i = 0; i < count; ++i) sum[i] += values[i];
  }
  return sum;
}

// Every rank's in-place all-reduce of `count` seeded values, checked against their sum: connects
// the ring.
void allReduceOnEveryRank(ThreadWorld& world, size_t count = kCount) {
  const int n = world.size();
  const std::vector<float> expected = seededSum(n, count);
  const auto results = onEveryRankOwnGpu<std::vector<float>>(n, [&](int rank) {
    DeviceBuffer buffer(count * sizeof(float));
    const std::vector<float> values = seeded(rank, count);
    driver().toDevice(reinterpret_cast<DevicePtr>(buffer.data), values.data(),
                      count * sizeof(float));
    if (tutti_allreduce(buffer.data, buffer.data, count, tuttiFloat32, tuttiSum, world.comm(rank),
                        nullptr) != tuttiSuccess)
      return std::vector<float>{};
    return download(buffer, count);
  });
  for (const auto& result : results) CHECK(result == expected);
}

}  // namespace

TEST_CASE("device buffers on one host run as kernels (avg with a division); alltoall is staged",
          "[gpu][kernels]") {
  ThreadWorld world(3);
  REQUIRE(world.ok());
  const long before = driver().kernelsLaunched();
  allReduceOnEveryRank(world);
  CHECK(driver().kernelsLaunched() - before == 3);  // one kernel per rank
  // avg: the sum's kernel, then the division's, on every rank (values: gpu-kernels-collectives).
  const long averaged = driver().kernelsLaunched();
  const auto avg = onEveryRankOwnGpu<int>(3, [&](int rank) {
    DeviceBuffer a(kCount * sizeof(float)), b(kCount * sizeof(float));
    const std::vector<float> values = seeded(rank);
    driver().toDevice(reinterpret_cast<DevicePtr>(a.data), values.data(), kCount * 4);
    return static_cast<int>(
        tutti_allreduce(a.data, b.data, kCount, tuttiFloat32, tuttiAvg, world.comm(rank), nullptr));
  });
  for (const int result : avg) CHECK(result == tuttiSuccess);
  CHECK(driver().kernelsLaunched() - averaged == 6);
  // alltoall is no ring collective: staged, no kernel.
  const long staged = driver().kernelsLaunched();
  const auto alltoall = onEveryRankOwnGpu<int>(3, [&](int rank) {
    DeviceBuffer a(kCount * 3 * sizeof(float)), b(kCount * 3 * sizeof(float));
    return static_cast<int>(
        tutti_alltoall(a.data, b.data, kCount, tuttiFloat32, world.comm(rank), nullptr));
  });
  for (const int result : alltoall) CHECK(result == tuttiSuccess);
  CHECK(driver().kernelsLaunched() == staged);
}

TEST_CASE("ranks of one process sharing a GPU are staged, and rank 0 warns why", "[gpu][kernels]") {
  tutti::tests::Warnings warnings;
  warnings.expect();
  constexpr int n = 3;
  ThreadWorld world(n);
  REQUIRE(world.ok());
  const std::vector<float> sum = seededSum(n);
  const long before = driver().kernelsLaunched();
  // Ranks 0 and 2 on GPU 0, rank 1 on GPU 1.
  const auto results = onEveryRank<std::vector<float>>(n, [&](int rank) {
    const CurrentDevice gpu(rank % 2);
    DeviceBuffer buffer(kCount * sizeof(float));
    const std::vector<float> values = seeded(rank);
    driver().toDevice(reinterpret_cast<DevicePtr>(buffer.data), values.data(), kCount * 4);
    if (tutti_allreduce(buffer.data, buffer.data, kCount, tuttiFloat32, tuttiSum, world.comm(rank),
                        nullptr) != tuttiSuccess)
      return std::vector<float>{};
    return download(buffer);
  });
  for (const auto& result : results) CHECK(result == sum);
  CHECK(driver().kernelsLaunched() == before);
  CHECK(warnings.count({"device buffers are staged through host memory",
                        "ranks 0, 2 are threads of one process on GPU-00010203-0405-0607-0809-"
                        "0a0b0c0d0e0f: their streams share"}) == 1);
  CHECK(warnings.all().size() == 1);
}

// Once their first device collective has shown that they share a GPU, such ranks' stream forms
// wait for their stream on the host and run as the blocking forms do (a stream wait could hold
// back a peer's copy in the hardware queues their streams share): the call returns after the work
// enqueued before it on its stream, with the result in place.
TEST_CASE("ranks of one process sharing a GPU wait for their streams on the host",
          "[gpu][kernels]") {
  tutti::tests::Warnings().expect();  // why the device buffers are staged
  constexpr int n = 2;
  ThreadWorld world(n);
  REQUIRE(world.ok());
  const std::vector<float> sum = seededSum(n);
  alignas(4) static uint32_t blockers[n] = {};
  std::atomic<bool> released[n] = {};
  struct Result {
    tuttiResult_t call = tuttiInternalError;
    bool afterRelease = false;
    std::vector<float> atReturn;
  };
  const auto results = onEveryRank<Result>(n, [&](int rank) {
    Result r;
    const CurrentDevice gpu(0);
    DeviceBuffer buffer(kCount * sizeof(float));
    const std::vector<float> values = seeded(rank);
    driver().toDevice(reinterpret_cast<DevicePtr>(buffer.data), values.data(), kCount * 4);
    if (tutti_allreduce(buffer.data, buffer.data, 1, tuttiFloat32, tuttiSum, world.comm(rank),
                        nullptr) != tuttiSuccess)
      return r;
    driver().toDevice(reinterpret_cast<DevicePtr>(buffer.data), values.data(), kCount * 4);
    Stream stream;
    stream.holdBack(blockers[rank]);
    std::thread release([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      released[rank] = true;
      std::atomic_ref<uint32_t>(blockers[rank]).store(1);
    });
    r.call = tutti_allreduce_stream(buffer.data, buffer.data, kCount, tuttiFloat32, tuttiSum,
                                    world.comm(rank), stream.get());
    r.afterRelease = released[rank];
    r.atReturn = download(buffer);
    release.join();
    stream.synchronize();
    return r;
  });
  for (const Result& r : results) {
    CHECK(r.call == tuttiSuccess);
    CHECK(r.afterRelease);
    CHECK(r.atReturn == sum);
  }
}

TEST_CASE("a host-ordered stream form whose peer never comes fails the call itself",
          "[gpu][kernels][faults]") {
  tutti::tests::Warnings().expect();  // the staging, the timeout
  ThreadWorld world(2);
  REQUIRE(world.ok());
  DeviceBuffer buffer(kCount * sizeof(float));
  const auto planned = onEveryRank<int>(2, [&](int rank) {
    const CurrentDevice gpu(0);
    DeviceBuffer mine(sizeof(float));
    return static_cast<int>(tutti_allreduce(mine.data, mine.data, 1, tuttiFloat32, tuttiSum,
                                            world.comm(rank), nullptr));
  });
  REQUIRE(planned == std::vector<int>{tuttiSuccess, tuttiSuccess});
  const CurrentDevice gpu(0);
  tuttiComm_t comm = world.comm(0);
  REQUIRE(tutti_comm_set_timeout(comm, 300) == tuttiSuccess);
  Stream stream;
  CHECK(tutti_allreduce_stream(buffer.data, buffer.data, kCount, tuttiFloat32, tuttiSum, comm,
                               stream.get()) == tuttiTimeout);
  CHECK(asyncError(comm) == tuttiTimeout);
  stream.synchronize();  // nothing of the operation was enqueued on it
}

TEST_CASE("a group's device collectives run as kernels in call order with its staged alltoall",
          "[gpu][kernels][group]") {
  constexpr int n = 3;
  ThreadWorld world(n);
  REQUIRE(world.ok());
  allReduceOnEveryRank(world);  // the ring is connected
  const std::vector<float> sum = seededSum(n);
  const std::vector<float> broadcast = seeded(100 + 1);  // root 1's
  const long before = driver().kernelsLaunched();
  struct Results {
    tuttiResult_t end = tuttiInternalError;
    std::vector<float> reduced, broadcast, exchanged;
  };
  const auto results = onEveryRankOwnGpu<Results>(n, [&](int rank) {
    Results r;
    DeviceBuffer a(kCount * sizeof(float)), b(kCount * sizeof(float));
    DeviceBuffer c(n * sizeof(float)), d(n * sizeof(float));
    const std::vector<float> mine = seeded(rank), root = seeded(100 + rank);
    std::vector<float> outgoing(n);
    for (int to = 0; to < n; ++to) outgoing[static_cast<size_t>(to)] = float(10 * rank + to);
    driver().toDevice(reinterpret_cast<DevicePtr>(a.data), mine.data(), kCount * 4);
    driver().toDevice(reinterpret_cast<DevicePtr>(b.data), root.data(), kCount * 4);
    driver().toDevice(reinterpret_cast<DevicePtr>(c.data), outgoing.data(), n * 4);
    tuttiComm_t comm = world.comm(rank);
    if (tutti_group_start() != tuttiSuccess ||
        tutti_allreduce(a.data, a.data, kCount, tuttiFloat32, tuttiSum, comm, nullptr) != 0 ||
        tutti_alltoall(c.data, d.data, 1, tuttiFloat32, comm, nullptr) != tuttiSuccess ||
        // reads what the staged alltoall wrote: the kernels after it wait for it
        tutti_allreduce(d.data, d.data, n, tuttiFloat32, tuttiSum, comm, nullptr) != 0 ||
        tutti_broadcast(b.data, b.data, kCount, tuttiFloat32, 1, comm, nullptr) != tuttiSuccess)
      return r;
    r.end = tutti_group_end();
    r.reduced = download(a);
    r.broadcast = download(b);
    r.exchanged = download(d, n);
    return r;
  });
  for (int rank = 0; rank < n; ++rank) {
    const Results& r = results[static_cast<size_t>(rank)];
    INFO("rank " << rank);
    REQUIRE(r.end == tuttiSuccess);
    CHECK(r.reduced == sum);
    CHECK(r.broadcast == broadcast);
    // Rank r received 10 * from + r from each; summed over the ranks.
    for (int from = 0; from < n; ++from)
      CHECK(r.exchanged[static_cast<size_t>(from)] == float(10 * from * n + n * (n - 1) / 2));
  }
  CHECK(driver().kernelsLaunched() - before == 3 * n);  // the alltoall is staged
}

TEST_CASE("one thread drives every rank's all-reduce in one group: staged until the ring is up",
          "[gpu][kernels][group]") {
  constexpr int n = 2;
  ThreadWorld world(n);
  REQUIRE(world.ok());
  const std::vector<float> sum = seededSum(n);
  // NCCL's one process driving several GPUs: a collective set-up inside the group would wait for
  // the rank this thread has not reached yet.
  const auto groupOnOneThread = [&] {
    std::deque<DeviceBuffer> buffers;  // never moved
    for (int rank = 0; rank < n; ++rank) {
      const CurrentDevice onItsGpu(rank);
      buffers.emplace_back(kCount * sizeof(float));
      const std::vector<float> values = seeded(rank);
      driver().toDevice(reinterpret_cast<DevicePtr>(buffers.back().data), values.data(),
                        kCount * 4);
    }
    REQUIRE(tutti_group_start() == tuttiSuccess);
    for (int rank = 0; rank < n; ++rank)
      REQUIRE(tutti_allreduce(buffers[size_t(rank)].data, buffers[size_t(rank)].data, kCount,
                              tuttiFloat32, tuttiSum, world.comm(rank), nullptr) == tuttiSuccess);
    REQUIRE(tutti_group_end() == tuttiSuccess);
    for (const DeviceBuffer& buffer : buffers) CHECK(download(buffer) == sum);
  };
  const long before = driver().kernelsLaunched();
  groupOnOneThread();
  CHECK(driver().kernelsLaunched() == before);  // staged: no ring yet
  allReduceOnEveryRank(world);                  // a thread per rank connects it
  const long connected = driver().kernelsLaunched();
  groupOnOneThread();
  CHECK(driver().kernelsLaunched() - connected == n);
}

TEST_CASE("a group with a refused call launches none of its kernels, and the communicator goes on",
          "[gpu][kernels][group]") {
  constexpr int n = 2;
  ThreadWorld world(n);
  REQUIRE(world.ok());
  allReduceOnEveryRank(world);
  const long before = driver().kernelsLaunched();
  const auto results = onEveryRankOwnGpu<std::pair<tuttiResult_t, tuttiResult_t>>(n, [&](int rank) {
    DeviceBuffer a(kCount * sizeof(float));
    tuttiComm_t comm = world.comm(rank);
    tutti_group_start();
    tutti_allreduce(a.data, a.data, kCount, tuttiFloat32, tuttiSum, comm, nullptr);
    tutti_broadcast(a.data, a.data, kCount, tuttiFloat32, /*root=*/n, comm, nullptr);  // refused
    const tuttiResult_t end = tutti_group_end();
    std::vector<float> host(4, 1.0f);
    return std::pair{
        end, tutti_allreduce(host.data(), host.data(), 4, tuttiFloat32, tuttiSum, comm, nullptr)};
  });
  for (const auto& [end, after] : results) {
    CHECK(end == tuttiInvalidArgument);  // the refused call's
    CHECK(after == tuttiSuccess);
  }
  CHECK(driver().kernelsLaunched() == before);  // the group's all-reduce never went to the GPU
  allReduceOnEveryRank(world);
}

TEST_CASE("a group's independent device collectives of one kernel go to the GPU as one launch",
          "[gpu][kernels][group]") {
  constexpr int n = 3;
  ThreadWorld world(n);
  REQUIRE(world.ok());
  allReduceOnEveryRank(world);  // the ring is connected
  // Per rank: five buckets all-reduced, the first large (Simple, several channels), the others
  // small (LL, one channel; avg among them), then a reduce-scatter (small): the reducing kernel
  // runs the large one in a launch, and the four small ones and the reduce-scatter in another
  // (one protocol per launch; nothing overlaps). Then an allgather from the reduce-scatter's
  // output (the copying kernel: a launch of its own) and an all-reduce that reads what that wrote
  // (it waits for it).
  const size_t counts[] = {200'000 + 3, 3000, 17, 1, 5000};
  constexpr size_t kBlock = 1000;
  const long before = driver().kernelsLaunched();
  const auto results = onEveryRankOwnGpu<std::vector<std::vector<float>>>(n, [&](int rank) {
    std::vector<std::unique_ptr<DeviceBuffer>> buckets;
    for (size_t b = 0; b < std::size(counts); ++b) {
      buckets.push_back(std::make_unique<DeviceBuffer>(counts[b] * sizeof(float)));
      const std::vector<float> values = seeded(rank + 10 * int(b), counts[b]);
      driver().toDevice(reinterpret_cast<DevicePtr>(buckets[b]->data), values.data(),
                        counts[b] * sizeof(float));
    }
    DeviceBuffer scattered(kBlock * n * sizeof(float)), piece(kBlock * sizeof(float)),
        gathered(kBlock * n * sizeof(float));
    const std::vector<float> spread = seeded(100 + rank, kBlock * n);
    driver().toDevice(reinterpret_cast<DevicePtr>(scattered.data), spread.data(),
                      spread.size() * sizeof(float));
    tuttiComm_t comm = world.comm(rank);
    tutti_group_start();
    for (size_t b = 0; b < std::size(counts); ++b)
      tutti_allreduce(buckets[b]->data, buckets[b]->data, counts[b], tuttiFloat32,
                      b == 1 ? tuttiAvg : tuttiSum, comm, nullptr);
    tutti_reduce_scatter(scattered.data, piece.data, kBlock, tuttiFloat32, tuttiSum, comm, nullptr);
    tutti_allgather(piece.data, gathered.data, kBlock, tuttiFloat32, comm, nullptr);
    tutti_allreduce(gathered.data, gathered.data, kBlock * n, tuttiFloat32, tuttiMax, comm,
                    nullptr);
    if (tutti_group_end() != tuttiSuccess) return std::vector<std::vector<float>>{};
    std::vector<std::vector<float>> out;
    for (size_t b = 0; b < std::size(counts); ++b) out.push_back(download(*buckets[b], counts[b]));
    out.push_back(download(gathered, kBlock * n));
    return out;
  });
  // Four launches per rank (the large all-reduce, the five small reducing collectives, the
  // allgather, the last all-reduce), and avg's division.
  CHECK(driver().kernelsLaunched() - before == n * (4 + 1));
  for (size_t b = 0; b < std::size(counts); ++b) {
    std::vector<float> expected(counts[b], 0.0f);
    for (int rank = 0; rank < n; ++rank) {
      const std::vector<float> values = seeded(rank + 10 * int(b), counts[b]);
      for (size_t i = 0; i < counts[b]; ++i) expected[i] += values[i];
    }
    for (const auto& result : results) {
      REQUIRE(result.size() == std::size(counts) + 1);
      if (b != 1) {
        CHECK(result[b] == expected);
        continue;
      }
      for (size_t i = 0; i < counts[b]; ++i)  // avg: the sum divided, however it rounds
        CHECK(result[b][i] == Approx(expected[i] / n).epsilon(1e-6));
    }
  }
  // The reduce-scatter's sum, gathered, then max-reduced: every rank holds the sum everywhere.
  std::vector<float> sum(kBlock * n, 0.0f);
  for (int rank = 0; rank < n; ++rank) {
    const std::vector<float> spread = seeded(100 + rank, kBlock * n);
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += spread[i];
  }
  for (const auto& result : results) CHECK(result.back() == sum);

  // Two all-reduces over one buffer, the second shifted by an element (its channels cut it
  // elsewhere): the second reads what the first writes, so each has a launch of its own.
  const long overlapping = driver().kernelsLaunched();
  const auto twice = onEveryRankOwnGpu<std::vector<float>>(n, [&](int rank) {
    DeviceBuffer x(kCount * sizeof(float));
    const std::vector<float> values = seeded(rank);
    driver().toDevice(reinterpret_cast<DevicePtr>(x.data), values.data(), kCount * sizeof(float));
    tuttiComm_t comm = world.comm(rank);
    tutti_group_start();
    tutti_allreduce(x.data, x.data, kCount, tuttiFloat32, tuttiSum, comm, nullptr);
    tutti_allreduce(static_cast<float*>(x.data) + 1, static_cast<float*>(x.data) + 1, kCount - 1,
                    tuttiFloat32, tuttiSum, comm, nullptr);
    if (tutti_group_end() != tuttiSuccess) return std::vector<float>{};
    return download(x);
  });
  CHECK(driver().kernelsLaunched() - overlapping == n * 2);
  std::vector<float> expected = seededSum(n);
  for (size_t i = 1; i < kCount; ++i) expected[i] *= n;
  for (const auto& result : twice) CHECK(result == expected);

  // Where buffers lie is each rank's affair, so peers may batch the same calls differently: rank
  // 0's second all-reduce reads what its first wrote (two launches), the others' does not (one
  // launch). The first is Simple on one channel, the second on three: each call runs alike on
  // every rank (its own channels), whatever launch holds it.
  constexpr size_t kSmall = 100'000, kLarge = 300'007;
  const long differently = driver().kernelsLaunched();
  const auto mixed = onEveryRankOwnGpu<std::vector<float>>(n, [&](int rank) {
    DeviceBuffer a(kLarge * sizeof(float)), b(kLarge * sizeof(float));
    const std::vector<float> first = seeded(rank, kLarge), second = seeded(rank + 50, kLarge);
    driver().toDevice(reinterpret_cast<DevicePtr>(a.data), first.data(), kLarge * sizeof(float));
    driver().toDevice(reinterpret_cast<DevicePtr>(b.data), second.data(), kLarge * sizeof(float));
    DeviceBuffer& again = rank == 0 ? a : b;
    tuttiComm_t comm = world.comm(rank);
    tutti_group_start();
    tutti_allreduce(a.data, a.data, kSmall, tuttiFloat32, tuttiSum, comm, nullptr);
    tutti_allreduce(again.data, again.data, kLarge, tuttiFloat32, tuttiSum, comm, nullptr);
    if (tutti_group_end() != tuttiSuccess) return std::vector<float>{};
    return download(again, kLarge);
  });
  CHECK(driver().kernelsLaunched() - differently == 2 + (n - 1));
  // Rank 0's buffer after the first (the sum of every first buffer's head, its own tail), plus
  // the others' second buffers.
  std::vector<float> sums = seeded(0, kLarge);
  for (int rank = 1; rank < n; ++rank) {
    const std::vector<float> head = seeded(rank, kLarge), second = seeded(rank + 50, kLarge);
    for (size_t i = 0; i < kSmall; ++i) sums[i] += head[i];
    for (size_t i = 0; i < kLarge; ++i) sums[i] += second[i];
  }
  for (const auto& result : mixed) CHECK(result == sums);
}

TEST_CASE("a group whose second launch fails abandons its first and fails the communicator",
          "[gpu][kernels][group][faults]") {
  tutti::tests::Warnings().expect();
  constexpr int n = 2;
  ThreadWorld world(n);
  REQUIRE(world.ok());
  allReduceOnEveryRank(world);
  // The all-reduce goes to the GPU held; the allgather's launch (the copying kernel) fails: the
  // held kernel must not stay on the GPU waiting for a release no task will make.
  driver().failLaunchesOf("tutti_copy_ll");
  const auto results = onEveryRankOwnGpu<std::pair<tuttiResult_t, tuttiResult_t>>(n, [&](int rank) {
    DeviceBuffer a(kCount * sizeof(float)), b(kCount * n * sizeof(float));
    tuttiComm_t comm = world.comm(rank);
    tutti_group_start();
    tutti_allreduce(a.data, a.data, 100, tuttiFloat32, tuttiSum, comm, nullptr);
    tutti_allgather(a.data, b.data, 100, tuttiFloat32, comm, nullptr);
    const tuttiResult_t end = tutti_group_end();
    std::vector<float> host(4, 1.0f);
    return std::pair{
        end, tutti_allreduce(host.data(), host.data(), 4, tuttiFloat32, tuttiSum, comm, nullptr)};
  });
  driver().failLaunchesOf("");
  for (const auto& [end, after] : results) {
    CHECK(end == tuttiSystemError);  // the launch's failure
    CHECK(after != tuttiSuccess);    // the communicator's, for good
  }
  std::vector<float> host(4, 1.0f);
  CHECK(tutti_allreduce(host.data(), host.data(), 4, tuttiFloat32, tuttiSum, world.comm(0),
                        nullptr) != tuttiSuccess);
  CHECK_THAT(tutti_get_last_error(), Contains("cuLaunchKernel"));
}

TEST_CASE("TUTTI_ALGO=tree: all-reduce runs over the device tree, the rest over the ring",
          "[gpu][kernels]") {
  const ScopedEnv tree("TUTTI_ALGO", "tree");
  // Five ranks on the communicator's double binary tree (NCCL's): channels alternate between its
  // two trees, in which every rank but one (0, an odd count's exception) is interior in one at
  // most.
  ThreadWorld world(5);
  REQUIRE(world.ok());
  const long before = driver().treeKernelsLaunched();
  allReduceOnEveryRank(world);  // LL, one channel
  const long interiorTwice = driver().treeKernelsInteriorTwice();
  allReduceOnEveryRank(world, 300'000 + 7);  // Simple, three channels, an odd tail
  CHECK(driver().treeKernelsLaunched() - before == 10);
  CHECK(driver().treeKernelsInteriorTwice() - interiorTwice == 1);  // one tree on all: 2
  // A broadcast is no all-reduce: the ring's.
  const long ringOnly = driver().treeKernelsLaunched();
  const auto broadcast = onEveryRankOwnGpu<int>(5, [&](int rank) {
    DeviceBuffer a(kCount * sizeof(float));
    return static_cast<int>(
        tutti_broadcast(a.data, a.data, kCount, tuttiFloat32, 0, world.comm(rank), nullptr));
  });
  for (const int result : broadcast) CHECK(result == tuttiSuccess);
  CHECK(driver().treeKernelsLaunched() == ringOnly);
}

TEST_CASE("a device kernel that cannot finish is aborted, its stream released, the error named",
          "[gpu][kernels][faults]") {
  tutti::tests::Warnings().expect();  // timeouts and aborts are warnings
  ThreadWorld world(2);
  REQUIRE(world.ok());
  allReduceOnEveryRank(world);  // the ring is connected
  DeviceBuffer buffer(kCount * sizeof(float));

  SECTION("a peer whose kernel never comes: the stream form times out, then the stream goes on") {
    tuttiComm_t comm = world.comm(0);
    REQUIRE(tutti_comm_set_timeout(comm, 300) == tuttiSuccess);
    Stream stream;
    REQUIRE(tutti_allreduce_stream(buffer.data, buffer.data, kCount, tuttiFloat32, tuttiSum, comm,
                                   stream.get()) == tuttiSuccess);
    stream.synchronize();  // returns: the abort flag ended the kernel
    CHECK(asyncError(comm) == tuttiTimeout);
    std::vector<float> host(4, 1.0f);
    CHECK(tutti_allreduce(host.data(), host.data(), 4, tuttiFloat32, tuttiSum, comm, nullptr) ==
          tuttiTimeout);
    CHECK_THAT(tutti_get_last_error(), Contains("allreduce #") && Contains("on the GPU") &&
                                           Contains("device kernels did not finish within 300 ms"));
  }
  SECTION("the blocking form times out the same way") {
    tuttiComm_t comm = world.comm(1);
    REQUIRE(tutti_comm_set_timeout(comm, 300) == tuttiSuccess);
    const CurrentDevice onItsGpu(1);
    DeviceBuffer its(kCount * sizeof(float));
    CHECK(tutti_broadcast(its.data, its.data, kCount, tuttiFloat32, 0, comm, nullptr) ==
          tuttiTimeout);
    CHECK_THAT(tutti_get_last_error(),
               Contains("rank 1: broadcast #") && Contains("device kernels did not finish"));
  }
  SECTION("an abort ends a kernel waiting for its peer") {
    tuttiComm_t comm = world.comm(1);
    const CurrentDevice onItsGpu(1);
    DeviceBuffer its(kCount * sizeof(float));
    Stream stream;
    REQUIRE(tutti_reduce_scatter_stream(its.data, its.data, kCount / 2, tuttiFloat32, tuttiMax,
                                        comm, stream.get()) == tuttiSuccess);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    REQUIRE(tutti_comm_abort(comm) == tuttiSuccess);
    stream.synchronize();
    CHECK(asyncError(comm) != tuttiSuccess);
  }
  SECTION("a peer that aborts: the waiting rank's kernel ends, naming it") {
    Stream stream;
    REQUIRE(tutti_allgather_stream(buffer.data, buffer.data, kCount / 2, tuttiFloat32,
                                   world.comm(0), stream.get()) == tuttiSuccess);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    REQUIRE(tutti_comm_abort(world.comm(1)) == tuttiSuccess);
    stream.synchronize();
    CHECK(asyncError(world.comm(0)) != tuttiSuccess);
    std::vector<float> host(4, 1.0f);
    CHECK(tutti_allreduce(host.data(), host.data(), 4, tuttiFloat32, tuttiSum, world.comm(0),
                          nullptr) != tuttiSuccess);
    CHECK_THAT(tutti_get_last_error(), Contains("rank 1") && Contains("abort"));
  }
  SECTION("a stream that never reaches the kernel: the wait times out, the stream goes on") {
    tuttiComm_t comm = world.comm(0);
    REQUIRE(tutti_comm_set_timeout(comm, 300) == tuttiSuccess);
    Stream stream;
    alignas(4) static uint32_t blocker = 0;
    std::atomic_ref<uint32_t>(blocker).store(0);
    stream.holdBack(blocker);
    REQUIRE(tutti_allreduce_stream(buffer.data, buffer.data, kCount, tuttiFloat32, tuttiSum, comm,
                                   stream.get()) == tuttiSuccess);
    std::vector<float> host(4, 1.0f);
    CHECK(tutti_allreduce(host.data(), host.data(), 4, tuttiFloat32, tuttiSum, comm, nullptr) ==
          tuttiTimeout);
    CHECK_THAT(tutti_get_last_error(), Contains("its stream did not reach it"));
    std::atomic_ref<uint32_t>(blocker).store(1);
    stream.synchronize();  // the kernel met the abort flag at once
    CHECK(asyncError(comm) == tuttiTimeout);
  }
}

TEST_CASE("the ring's connection: a peer that never comes times out naming it", "[gpu][kernels]") {
  tutti::tests::Warnings().expect();
  ThreadWorld world(2);
  REQUIRE(world.ok());
  tuttiComm_t comm = world.comm(0);
  REQUIRE(tutti_comm_set_timeout(comm, 300) == tuttiSuccess);
  DeviceBuffer buffer(kCount * sizeof(float));
  CHECK(tutti_allreduce(buffer.data, buffer.data, kCount, tuttiFloat32, tuttiSum, comm, nullptr) ==
        tuttiTimeout);
  CHECK_THAT(tutti_get_last_error(), Contains("rank 1"));
}
