// Reducer over thread worlds: exact averages before and after the rebuild, the agreed rebuild,
// no_sync, unused parameters, gradients as bucket views and the usage errors.
#include "bucketing/reducer.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <memory>
#include <numeric>
#include <random>
#include <thread>

#include "tests/unit/bucketing/grad_store.hpp"
#include "tests/unit/bucketing/rank_threads.hpp"

namespace tb = tutti::bucketing;
using tb::testing::GradStore;
using tb::testing::onEveryRank;
using Buckets = std::vector<std::vector<size_t>>;

namespace {

double gradient(int iteration, size_t param, int rank, size_t i) {
  return tb::testing::seededValue(static_cast<uint64_t>(iteration * 31) + param, rank, i);
}

void fill(GradStore& grads, size_t p, int iteration, int rank) {
  for (size_t i = 0; i < grads.numel(p); ++i) grads.set(p, i, gradient(iteration, p, rank, i));
}

// Rank 0 marks in reverse declaration order, the others in a shuffled one of their own.
std::vector<size_t> markOrder(size_t count, int rank, int iteration) {
  std::vector<size_t> order(count);
  std::iota(order.rbegin(), order.rend(), size_t{0});
  if (rank > 0) std::shuffle(order.begin(), order.end(), std::mt19937(rank * 100 + iteration));
  return order;
}

void expectNoErrors(const std::vector<std::string>& errors) {
  for (const std::string& error : errors) CHECK(error.empty());
}

tb::ReducerOptions smallBuckets() {
  tb::ReducerOptions options;
  options.firstBucketBytes = 1024;
  options.bucketCapBytes = 4096;
  return options;
}

}  // namespace

TEST_CASE("gradients are averaged exactly, before and after the rebuild", "[bucketing]") {
  const auto specs = tb::testing::smallModel();
  for (int nranks : {2, 4}) {
    INFO("ranks " << nranks);
    const auto n = static_cast<size_t>(nranks);
    std::vector<size_t> mismatches(n, 0), badStats(n, 0);
    std::vector<Buckets> initial(n), rebuilt(n);
    std::vector<size_t> rank0Order;
    std::vector<int> hasRebuilt(n, 0);
    const auto errors = onEveryRank(nranks, [&](tuttiComm_t comm, int rank) {
      GradStore grads(specs);
      tb::Reducer reducer(comm, grads.buffers(), smallBuckets());
      initial[static_cast<size_t>(rank)] = reducer.bucketAssignment();
      for (int iteration = 0; iteration < 3; ++iteration) {
        const std::vector<size_t> order = markOrder(specs.size(), rank, iteration);
        if (rank == 0 && iteration == 0) rank0Order = order;
        reducer.prepareForBackward();
        for (size_t p : order) {
          fill(grads, p, iteration, rank);
          reducer.markReady(p);
        }
        reducer.finalize();
        for (size_t p = 0; p < specs.size(); ++p)
          for (size_t i = 0; i < grads.numel(p); ++i) {
            double sum = 0;
            for (int r = 0; r < nranks; ++r) sum += gradient(iteration, p, r, i);
            if (grads.get(p, i) != sum / nranks) ++mismatches[static_cast<size_t>(rank)];
          }
        const tb::IterationStats stats = reducer.lastStats();
        const size_t bytes =
            std::accumulate(stats.bucketBytes.begin(), stats.bucketBytes.end(), size_t{0});
        if (bytes != 300 * 4 + 64 * 8 + 1000 * 4 + 17 * 4 + 256 * 8 + 500 * 4 ||
            stats.exposedCommMs < 0 || stats.exposedCommMs > stats.commMs ||
            stats.iteration != iteration + 1)
          ++badStats[static_cast<size_t>(rank)];
      }
      rebuilt[static_cast<size_t>(rank)] = reducer.bucketAssignment();
      hasRebuilt[static_cast<size_t>(rank)] = reducer.hasRebuiltBuckets();
    });
    expectNoErrors(errors);
    std::vector<tb::TensorSize> sizes;
    for (const auto& spec : specs)
      sizes.push_back({spec.numel * tutti_type_size(spec.dtype), spec.dtype});
    const Buckets expectedRebuilt =
        tb::computeBucketAssignmentBySize(sizes, {1024, 4096}, rank0Order);
    for (size_t r = 0; r < n; ++r) {
      CHECK(mismatches[r] == 0);
      CHECK(badStats[r] == 0);
      // First iteration: one bucket per dtype, PyTorch's list reversed.
      CHECK(initial[r] == Buckets{{1, 4}, {0, 2, 3, 5}});
      CHECK(hasRebuilt[r] == 1);
      CHECK(rebuilt[r] == expectedRebuilt);  // rank 0's ready order, on every rank
    }
  }
}

TEST_CASE("without the first-iteration rule, buckets are size-limited and reversed",
          "[bucketing]") {
  std::vector<Buckets> assignment(2);
  const auto errors = onEveryRank(2, [&](tuttiComm_t comm, int rank) {
    GradStore grads(tb::testing::smallModel());
    tb::ReducerOptions options = smallBuckets();
    options.singleBucketFirstIteration = false;
    assignment[static_cast<size_t>(rank)] =
        tb::Reducer(comm, grads.buffers(), options).bucketAssignment();
  });
  expectNoErrors(errors);
  // Declaration order: float32 0 (1200 B) closes the 1 KiB first bucket; 2 + 3 (4068 B) stay
  // under 4 KiB and 5 overshoots it. float64 1 (512 B) + 4 (2048 B) pass 1 KiB. Sorted by the
  // smallest index, then reversed.
  for (const Buckets& buckets : assignment) CHECK(buckets == Buckets{{2, 3, 5}, {1, 4}, {0}});
}

TEST_CASE("markReady from several threads of one rank", "[bucketing]") {
  const auto specs = tb::testing::smallModel();
  std::vector<size_t> mismatches(2, 0);
  const auto errors = onEveryRank(2, [&](tuttiComm_t comm, int rank) {
    GradStore grads(specs);
    tb::Reducer reducer(comm, grads.buffers(), smallBuckets());
    for (int iteration = 0; iteration < 4; ++iteration) {
      reducer.prepareForBackward();
      std::vector<std::thread> hooks;  // parameters p, p + 3 on thread p
      for (size_t t = 0; t < 3; ++t)
        hooks.emplace_back([&, t] {
          for (size_t p = t; p < specs.size(); p += 3) {
            fill(grads, p, iteration, rank);
            reducer.markReady(p);
          }
        });
      for (std::thread& hook : hooks) hook.join();
      reducer.finalize();
      for (size_t p = 0; p < specs.size(); ++p)
        for (size_t i = 0; i < grads.numel(p); ++i)
          if (grads.get(p, i) != (gradient(iteration, p, 0, i) + gradient(iteration, p, 1, i)) / 2)
            ++mismatches[static_cast<size_t>(rank)];
    }
  });
  expectNoErrors(errors);
  CHECK(mismatches == std::vector<size_t>{0, 0});
}

TEST_CASE("no_sync accumulates locally; the next synchronised step averages the sums",
          "[bucketing]") {
  const auto specs = tb::testing::smallModel();
  std::vector<size_t> localMismatches(2, 0), mismatches(2, 0);
  const auto errors = onEveryRank(2, [&](tuttiComm_t comm, int rank) {
    GradStore grads(specs);
    tb::Reducer reducer(comm, grads.buffers(), smallBuckets());
    auto accumulate = [&](int iteration) {
      for (size_t p = 0; p < specs.size(); ++p) {
        for (size_t i = 0; i < grads.numel(p); ++i)
          grads.set(p, i, grads.get(p, i) + gradient(iteration, p, rank, i));
        reducer.markReady(p);
      }
    };
    reducer.setSyncEnabled(false);
    for (int iteration = 0; iteration < 2; ++iteration) {
      reducer.prepareForBackward();
      accumulate(iteration);
      reducer.finalize();
    }
    for (size_t p = 0; p < specs.size(); ++p)
      for (size_t i = 0; i < grads.numel(p); ++i)
        if (grads.get(p, i) != gradient(0, p, rank, i) + gradient(1, p, rank, i))
          ++localMismatches[static_cast<size_t>(rank)];
    reducer.setSyncEnabled(true);
    reducer.prepareForBackward();
    accumulate(2);
    reducer.finalize();
    for (size_t p = 0; p < specs.size(); ++p)
      for (size_t i = 0; i < grads.numel(p); ++i) {
        double sum = 0;
        for (int r = 0; r < 2; ++r)
          for (int iteration = 0; iteration < 3; ++iteration) sum += gradient(iteration, p, r, i);
        if (grads.get(p, i) != sum / 2) ++mismatches[static_cast<size_t>(rank)];
      }
  });
  expectNoErrors(errors);
  CHECK(localMismatches == std::vector<size_t>{0, 0});
  CHECK(mismatches == std::vector<size_t>{0, 0});
}

TEST_CASE("unused parameters: unused everywhere stay untouched, unused somewhere are averaged",
          "[bucketing]") {
  const auto specs = tb::testing::smallModel();
  for (bool inBuckets : {false, true}) {
    INFO("gradientAsBucketView " << inBuckets);
    std::vector<size_t> mismatches(2, 0);
    std::vector<int> rebuilt(2, 1);
    std::vector<std::vector<size_t>> unusedEverywhere(2);
    const auto errors = onEveryRank(2, [&](tuttiComm_t comm, int rank) {
      GradStore grads(specs);
      tb::ReducerOptions options = smallBuckets();
      options.findUnusedParameters = true;
      options.gradientAsBucketView = inBuckets;
      tb::Reducer reducer(comm, grads.buffers(), options);
      auto at = [&](size_t p) {
        return inBuckets ? reducer.gradientView(p).get() : grads.buffers()[p].data;
      };
      auto set = [&](size_t p, size_t i, double value) {
        tb::testing::setValueAt(at(p), specs[p].dtype, i, value);
      };
      // Parameter 0 is unused everywhere, parameter 3 on rank 1 only, where it holds a stale 7.
      const std::vector<size_t> unused =
          rank == 0 ? std::vector<size_t>{0} : std::vector<size_t>{0, 3};
      for (int iteration = 0; iteration < 2; ++iteration) {
        for (size_t i = 0; i < specs[0].numel; ++i) set(0, i, 42);
        for (size_t i = 0; rank == 1 && i < specs[3].numel; ++i) set(3, i, 7);
        reducer.prepareForBackward(unused);
        for (size_t p : markOrder(specs.size(), rank, iteration)) {
          if (std::find(unused.begin(), unused.end(), p) != unused.end()) continue;
          for (size_t i = 0; i < specs[p].numel; ++i) set(p, i, gradient(iteration, p, rank, i));
          reducer.markReady(p);
        }
        reducer.finalize();
        for (size_t p = 0; p < specs.size(); ++p)
          for (size_t i = 0; i < specs[p].numel; ++i) {
            double expected = 42;
            if (p == 3)
              expected = gradient(iteration, p, 0, i) / 2;
            else if (p != 0)
              expected = (gradient(iteration, p, 0, i) + gradient(iteration, p, 1, i)) / 2;
            if (tb::testing::valueAt(at(p), specs[p].dtype, i) != expected)
              ++mismatches[static_cast<size_t>(rank)];
          }
      }
      rebuilt[static_cast<size_t>(rank)] = reducer.hasRebuiltBuckets();
      unusedEverywhere[static_cast<size_t>(rank)] = reducer.unusedEverywhere();
    });
    expectNoErrors(errors);
    CHECK(mismatches == std::vector<size_t>{0, 0});
    CHECK(rebuilt == std::vector<int>{0, 0});  // PyTorch does not rebuild with unused parameters
    CHECK(unusedEverywhere == std::vector<std::vector<size_t>>{{0}, {0}});
  }
}

TEST_CASE("gradientAsBucketView: averages in the buckets, carried across the rebuild",
          "[bucketing]") {
  const auto specs = tb::testing::smallModel();
  std::vector<size_t> mismatches(2, 0), notCarried(2, 0);
  std::vector<int> rebuilt(2, 0);
  const auto errors = onEveryRank(2, [&](tuttiComm_t comm, int rank) {
    std::vector<tb::TensorBuffer> shapes = GradStore(specs).buffers();
    for (tb::TensorBuffer& shape : shapes) shape.data = nullptr;  // the buckets hold the values
    tb::ReducerOptions options = smallBuckets();
    options.gradientAsBucketView = true;
    tb::Reducer reducer(comm, shapes, options);
    auto value = [&](const std::shared_ptr<void>& view, size_t p, size_t i) {
      return tb::testing::valueAt(view.get(), specs[p].dtype, i);
    };
    for (int iteration = 0; iteration < 3; ++iteration) {
      std::vector<std::shared_ptr<void>> before;  // the last averages, in the buckets so far
      for (size_t p = 0; p < specs.size(); ++p) before.push_back(reducer.gradientView(p));
      reducer.prepareForBackward();  // the second iteration rebuilds the buckets
      for (size_t p = 0; p < specs.size(); ++p)
        for (size_t i = 0; i < specs[p].numel; ++i)
          if (value(reducer.gradientView(p), p, i) != value(before[p], p, i))
            ++notCarried[static_cast<size_t>(rank)];
      for (size_t p : markOrder(specs.size(), rank, iteration)) {
        for (size_t i = 0; i < specs[p].numel; ++i)
          tb::testing::setValueAt(reducer.gradientView(p).get(), specs[p].dtype, i,
                                  gradient(iteration, p, rank, i));
        reducer.markReady(p);
      }
      reducer.finalize();
      for (size_t p = 0; p < specs.size(); ++p)
        for (size_t i = 0; i < specs[p].numel; ++i)
          if (value(reducer.gradientView(p), p, i) !=
              (gradient(iteration, p, 0, i) + gradient(iteration, p, 1, i)) / 2)
            ++mismatches[static_cast<size_t>(rank)];
    }
    rebuilt[static_cast<size_t>(rank)] = reducer.hasRebuiltBuckets();
  });
  expectNoErrors(errors);
  CHECK(mismatches == std::vector<size_t>{0, 0});
  CHECK(notCarried == std::vector<size_t>{0, 0});
  CHECK(rebuilt == std::vector<int>{1, 1});
}

TEST_CASE("a parameter marked twice is an error naming it", "[bucketing]") {
  std::vector<std::string> messages(2);
  const auto errors = onEveryRank(2, [&](tuttiComm_t comm, int rank) {
    GradStore grads(tb::testing::smallModel());
    tb::Reducer reducer(comm, grads.buffers());
    reducer.prepareForBackward();
    for (size_t p = 0; p < grads.size(); ++p) reducer.markReady(p);
    try {
      reducer.markReady(2);
    } catch (const tutti::CommError& error) {
      messages[static_cast<size_t>(rank)] = error.what();
    }
    reducer.finalize();  // the error changed nothing
  });
  expectNoErrors(errors);
  for (const std::string& message : messages) {
    CHECK_THAT(message, Catch::Contains("2 ('p2')") && Catch::Contains("twice"));
  }
}

TEST_CASE("an unfinished reduction is an error naming the missing parameters", "[bucketing]") {
  std::vector<std::string> finalizeErrors(2), prepareErrors(2);
  const auto errors = onEveryRank(2, [&](tuttiComm_t comm, int rank) {
    GradStore grads(tb::testing::smallModel());
    tb::Reducer reducer(comm, grads.buffers());
    reducer.prepareForBackward();
    for (size_t p = 0; p < grads.size(); ++p)
      if (p != 4) reducer.markReady(p);
    try {
      reducer.finalize();
    } catch (const tutti::CommError& error) {
      finalizeErrors[static_cast<size_t>(rank)] = error.what();
    }
    try {
      reducer.prepareForBackward();
    } catch (const tutti::CommError& error) {
      prepareErrors[static_cast<size_t>(rank)] = error.what();
    }
  });
  expectNoErrors(errors);
  for (size_t r = 0; r < 2; ++r) {
    CHECK_THAT(finalizeErrors[r], Catch::Contains("4 ('p4')"));
    CHECK_THAT(prepareErrors[r], Catch::Contains("did not finish") && Catch::Contains("4 ('p4')"));
  }
}

TEST_CASE("invalid gradients are rejected at construction", "[bucketing]") {
  const auto errors = onEveryRank(1, [&](tuttiComm_t comm, int) {
    int32_t data[4] = {};
    tb::Reducer(comm, {{"ints", {4}, tuttiInt32, data}});
  });
  CHECK_THAT(errors[0], Catch::Contains("0 ('ints')") && Catch::Contains("int32"));
}

TEST_CASE("gradientView without gradientAsBucketView is an error", "[bucketing]") {
  const auto errors = onEveryRank(1, [&](tuttiComm_t comm, int) {
    float data[4] = {};
    tb::Reducer(comm, {{"w", {4}, tuttiFloat32, data}}).gradientView(0);
  });
  CHECK_THAT(errors[0], Catch::Contains("gradientAsBucketView"));
}
